package report

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Report is a whole benchmark run.
type Report struct {
	// Title is the document's heading.
	Title string
	// Machine is where it ran.
	Machine Machine
	// Started and Finished bound the run.
	Started, Finished time.Time
	// Command is how to reproduce it.
	Command string
	// Preface paragraphs come before the summary.
	Preface []string
	// Sections are the benchmarks, in order.
	Sections []Section
}

// Section is one benchmark's results.
type Section struct {
	Title string
	// Text paragraphs say what was measured and how.
	Text []string
	// Tables hold the figures.
	Tables []Table
	// Targets are the targets this benchmark checks.
	Targets []Target
	// Notes are remarks after the tables (a bullet list).
	Notes []string
}

// Table is a markdown table.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// Status is whether a target was met.
type Status string

// The statuses of a target.
const (
	Met         Status = "met"
	Missed      Status = "MISSED"
	NotMeasured Status = "not measured"
)

// Target is one target of a benchmark and what the run measured for it.
type Target struct {
	// What names the target, Want states it ("p99 <= 1.3x baseline").
	What, Want string
	// Got is the measured figure.
	Got    string
	Status Status
}

// Check returns a Target met when ok.
func Check(what, want, got string, ok bool) Target {
	s := Missed
	if ok {
		s = Met
	}
	return Target{What: what, Want: want, Got: got, Status: s}
}

// Markdown renders the report.
func (r *Report) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	for _, p := range r.Preface {
		fmt.Fprintf(&b, "%s\n\n", p)
	}
	b.WriteString("## Machine\n\n")
	writeTable(&b, Table{Header: []string{"", ""}, Rows: r.Machine.rows(r.Started, r.Finished, r.Command)})

	var targets [][]string
	for _, s := range r.Sections {
		for _, t := range s.Targets {
			targets = append(targets, []string{s.Title, t.What, t.Want, t.Got, string(t.Status)})
		}
	}
	if len(targets) > 0 {
		b.WriteString("## Targets\n\n")
		writeTable(&b, Table{Header: []string{"benchmark", "target", "wanted", "measured", "status"}, Rows: targets})
	}
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "## %s\n\n", s.Title)
		for _, p := range s.Text {
			fmt.Fprintf(&b, "%s\n\n", p)
		}
		for _, t := range s.Tables {
			writeTable(&b, t)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(n, "\n", " "))
		}
		if len(s.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

func writeTable(b *bytes.Buffer, t Table) {
	if t.Caption != "" {
		fmt.Fprintf(b, "%s\n\n", t.Caption)
	}
	if len(t.Header) == 0 {
		return
	}
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Header {
			cell := ""
			if i < len(cells) {
				cell = cells[i]
			}
			fmt.Fprintf(b, " %s |", escape(cell))
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	b.WriteString("\n")
}

// escape keeps a cell on one line and its pipes from splitting it.
func escape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
