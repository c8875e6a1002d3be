package env

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Sample is one line of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples a process exposes.
type Metrics []Sample

// Sum adds the values of the samples named name whose labels include all
// of match.
func (m Metrics) Sum(name string, match map[string]string) float64 {
	var total float64
	for _, s := range m {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.Value
		}
	}
	return total
}

// Has reports whether a sample named name is present.
func (m Metrics) Has(name string) bool {
	for _, s := range m {
		if s.Name == name {
			return true
		}
	}
	return false
}

// ScrapeMetrics reads the Prometheus metrics served at url.
func ScrapeMetrics(ctx context.Context, url string) (Metrics, error) {
	return scrape(ctx, http.DefaultClient, url)
}

// APIServerMetrics reads kube-apiserver's own metrics whose names start
// with one of prefixes.
func (e *Env) APIServerMetrics(ctx context.Context, prefixes ...string) (Metrics, error) {
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return nil, fmt.Errorf("a client for kube-apiserver's metrics: %w", err)
	}
	return scrape(ctx, hc, strings.TrimSuffix(e.Config.Host, "/")+"/metrics", prefixes...)
}

func scrape(ctx context.Context, hc *http.Client, url string, prefixes ...string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping metrics at %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping metrics at %s: HTTP %d", url, resp.StatusCode)
	}
	return ParseMetrics(resp.Body, prefixes...)
}

// ParseMetrics reads the Prometheus text format: `name{k="v",...} value`
// lines; comments and blank lines are skipped, as are timestamps. With
// prefixes, only samples whose names start with one of them are read.
func ParseMetrics(r io.Reader, prefixes ...string) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || !hasPrefix(line, prefixes) {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func hasPrefix(line string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	rest := line
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return s, fmt.Errorf("no value in %q", line)
	} else {
		s.Name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		end, err := parseLabels(rest, s.Labels)
		if err != nil {
			return s, fmt.Errorf("%w in %q", err, line)
		}
		rest = rest[end:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value %q in %q: %w", fields[0], line, err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `{k="v",...}` at the start of s into labels and
// returns the index just past the closing brace.
func parseLabels(s string, labels map[string]string) (int, error) {
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i < len(s) && s[i] == '}' {
			return i + 1, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return 0, fmt.Errorf("malformed labels")
		}
		key := s[i : i+eq]
		i += eq + 2
		var b strings.Builder
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return 0, fmt.Errorf("unterminated label value")
		}
		labels[key] = b.String()
		i++
	}
}
