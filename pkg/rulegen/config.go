// Package rulegen renders Pairwise's Prometheus rule pack (recording rules and
// alerts) from a small configuration file, with every threshold taken from
// pkg/verdict's one definition of a bad minute. It is pure: no Grafana SDK, no
// Prometheus libraries, only text.
package rulegen

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// DefaultRunbookBase is where the alerts' runbook_url anchors point.
const DefaultRunbookBase = "https://github.com/pairwise-canary/pairwise/blob/main/rules/README.md"

// File is the rule pack configuration (rules/pairwise.yaml).
type File struct {
	// Defaults override verdict.Default() for every canary.
	Defaults verdict.Overrides `yaml:"defaults"`
	// RunbookBase is the page whose anchors the alerts link to.
	RunbookBase string `yaml:"runbookBase"`
	// Canaries are rendered in the order given, one rule group each.
	Canaries []Canary `yaml:"canaries"`

	// Source is the config path named in the generated header; the command
	// sets it, it is not read from the file.
	Source string `yaml:"-"`
}

// Canary is one paired-fleet canary: a histogram metric and the selectors of
// its two fleets.
type Canary struct {
	// Name is the value of the canary label on every series and alert.
	Name string `yaml:"name"`
	// Metric is the histogram name without _bucket.
	Metric string `yaml:"metric"`
	// Baseline and Canary are label-matcher selectors, parsed by pkg/selector.
	Baseline string `yaml:"baseline"`
	Canary   string `yaml:"canary"`
	// Histogram is native or classic: the rule pack cannot fall back at run
	// time as the judge does, so the kind is chosen here.
	Histogram string `yaml:"histogram"`
	// Overrides of the defaults for this canary only.
	verdict.Overrides `yaml:",inline"`
}

// Load reads a configuration file strictly: unknown keys are errors, so a
// misspelt threshold cannot silently keep its default.
func Load(data []byte) (File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, fmt.Errorf("read rule pack config: %w", err)
	}
	return f, nil
}

// canaryName is what a canary label value and a rule group suffix may be.
var canaryName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// resolved is a validated canary with its effective configuration.
type resolved struct {
	Canary
	config           verdict.Config
	kind             prom.Kind
	baseline, canary selector.Selector
}

// resolve validates the file and returns each canary with its configuration.
// Every error names the canary and the field.
func (f File) resolve() ([]resolved, error) {
	if len(f.Canaries) == 0 {
		return nil, errors.New("canaries: the config lists no canary")
	}
	defaults := f.Defaults.Apply(verdict.Default())
	if err := defaults.Validate(); err != nil {
		return nil, fmt.Errorf("defaults: %w", err)
	}
	seen := map[string]bool{}
	out := make([]resolved, 0, len(f.Canaries))
	for i, c := range f.Canaries {
		r, err := c.resolve(defaults)
		if err != nil {
			name := c.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return nil, fmt.Errorf("canary %s: %w", name, err)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("canary %s: name: used by an earlier canary; names must be unique", c.Name)
		}
		seen[c.Name] = true
		out = append(out, r)
	}
	return out, nil
}

func (c Canary) resolve(defaults verdict.Config) (resolved, error) {
	r := resolved{Canary: c}
	if !canaryName.MatchString(c.Name) {
		return r, fmt.Errorf("name: %q must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", c.Name)
	}
	if err := selector.ValidMetricName(c.Metric); err != nil {
		return r, fmt.Errorf("metric: %w", err)
	}
	if strings.HasSuffix(c.Metric, "_bucket") {
		return r, fmt.Errorf("metric: give the histogram name without _bucket, not %q", c.Metric)
	}
	var err error
	if r.baseline, err = parseFleet(c.Baseline); err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	if r.canary, err = parseFleet(c.Canary); err != nil {
		return r, fmt.Errorf("canary: %w", err)
	}
	if sameMatchers(r.baseline, r.canary) {
		return r, fmt.Errorf("canary: selects the same series as baseline (%s)", r.baseline)
	}
	switch prom.Kind(c.Histogram) {
	case prom.Native, prom.Classic:
		r.kind = prom.Kind(c.Histogram)
	default:
		return r, fmt.Errorf("histogram: %q must be native or classic (the rule pack cannot fall back at run time as the judge's auto does)", c.Histogram)
	}
	r.config = c.Overrides.Apply(defaults)
	if err := r.config.Validate(); err != nil {
		return r, err
	}
	return r, nil
}

// parseFleet parses a fleet selector; le is reserved for classic buckets.
func parseFleet(text string) (selector.Selector, error) {
	sel, err := selector.Parse(text)
	if err != nil {
		return nil, err
	}
	for _, m := range sel {
		if m.Name == "le" {
			return nil, fmt.Errorf("label le is the bucket bound of classic histograms and cannot select a fleet")
		}
	}
	return sel, nil
}

// sameMatchers reports whether two selectors hold the same matchers in any order.
func sameMatchers(a, b selector.Selector) bool {
	key := func(s selector.Selector) string {
		parts := make([]string, len(s))
		for i, m := range s {
			parts[i] = selector.Selector{m}.String()
		}
		slices.Sort(parts)
		return strings.Join(parts, ",")
	}
	return key(a) == key(b)
}
