package report

import "fmt"

// Compare is the section that sets the targets of a run of an earlier
// tree (before) beside those of this run (after), target by target: the
// rows are after's targets that before measured too, matched by benchmark
// and target name.
func Compare(title, beforeName string, before, after []Section) Section {
	type key struct{ section, what string }
	measured := map[key]Target{}
	for _, s := range before {
		for _, t := range s.Targets {
			measured[key{s.Title, t.What}] = t
		}
	}
	table := Table{Header: []string{"benchmark", "target", "wanted", "before: " + beforeName, "after: this tree", "status after"}}
	for _, s := range after {
		for _, t := range s.Targets {
			b, ok := measured[key{s.Title, t.What}]
			if !ok {
				continue
			}
			table.Rows = append(table.Rows, []string{s.Title, t.What, t.Want, fmt.Sprintf("%s (%s)", b.Got, b.Status), t.Got, string(t.Status)})
		}
	}
	sec := Section{Title: title, Text: []string{fmt.Sprintf("The same benchmarks, run first against lockstep built from %s "+
		"(its webhook binary and its deploy/ manifests: CRDs, webhook configurations, RBAC) in a control plane of its own, then against "+
		"this tree, one after the other on this machine. Each figure is a ratio measured within its own run.", beforeName)}}
	if len(table.Rows) == 0 {
		sec.Notes = append(sec.Notes, "No target was measured in both runs.")
		return sec
	}
	sec.Tables = append(sec.Tables, table)
	return sec
}
