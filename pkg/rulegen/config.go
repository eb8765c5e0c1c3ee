// Package rulegen renders Pairwise's Prometheus rule pack (recording rules and
// alerts) from a small configuration file, with every threshold taken from
// pkg/verdict's one definition of a bad minute. It is pure: no Grafana SDK, no
// Prometheus libraries, only text.
package rulegen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

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
	// QueryOffset is every group's query_offset, whole seconds up to 4m
	// ("10s", "1m"; "" or "0s": none): each evaluation reads and records
	// the data as of that long before it, so the minute a group reads is
	// complete when the last scrape of a minute is written late (a slow
	// target, remote write to a Mimir ruler).
	QueryOffset string `yaml:"queryOffset"`
	// Generic are label-driven groups: each reads the raw series of every
	// canary that follows its label convention once a minute, in one
	// vectorised rule per series.
	Generic []Generic `yaml:"generic"`
	// Canaries are rendered in the order given, one rule group each.
	Canaries []Canary `yaml:"canaries"`

	// Source is the config path named in the generated header; the command
	// sets it, it is not read from the file.
	Source string `yaml:"-"`
}

// Generic is a label-driven group: every canary whose series carry the
// identifying labels By and the fleet label FleetLabel, set to Baseline or
// Canary, has its fleets' minutes recorded (prom.MinuteHistogramRecord and
// prom.MinuteHealthRecord, labelled with By and FleetLabel) without the
// pack being regenerated. A canary that names the generic group and its
// labels' values (Canary.Generic) is judged in the generic group, after its
// reads.
type Generic struct {
	// Name names the rule group (pairwise-generic-<name>).
	Name string `yaml:"name"`
	// Metric is the histogram name without _bucket.
	Metric string `yaml:"metric"`
	// Histogram is native or classic.
	Histogram string `yaml:"histogram"`
	// By are the labels that identify a canary, such as namespace and service.
	By []string `yaml:"by"`
	// FleetLabel is the label telling the fleets apart, such as track.
	FleetLabel string `yaml:"fleetLabel"`
	// Baseline and Canary are FleetLabel's values of the two fleets.
	Baseline string `yaml:"baseline"`
	Canary   string `yaml:"canary"`
	// Matchers are optional extra label matchers, parsed by pkg/selector.
	Matchers string `yaml:"matchers"`
	// JudgeEvery judges every canary of the convention in the group itself,
	// by the evidence rule under the file's defaults, with rules vectorised
	// over By: a new canary is judged, and rolled back, without the pack
	// being regenerated. Native histograms only (the counts beyond each
	// canary's threshold come from Prometheus 3.11's trim operator >/, which
	// takes a threshold per series); no canary may name the group.
	JudgeEvery bool `yaml:"judgeEvery"`
}

// Canary is one paired-fleet canary: a histogram metric and the selectors of
// its two fleets, or a generic group and the values of its labels.
type Canary struct {
	// Name is the value of the canary label on every series and alert.
	Name string `yaml:"name"`
	// Generic names the label-driven group that records this canary's
	// minutes; Labels then give the values of its identifying labels, and
	// Metric, Histogram, Baseline and Canary are left out.
	Generic string            `yaml:"generic"`
	Labels  map[string]string `yaml:"labels"`
	// Metric is the histogram name without _bucket.
	Metric string `yaml:"metric"`
	// Baseline and Canary are label-matcher selectors, parsed by pkg/selector.
	Baseline string `yaml:"baseline"`
	Canary   string `yaml:"canary"`
	// Histogram is native or classic: the rule pack cannot fall back at run
	// time as the judge does, so the kind is chosen here.
	Histogram string `yaml:"histogram"`
	// ErrorsMetric is an optional request counter of both fleets (or a
	// histogram, whose count is read), and Errors the matchers of its failed
	// requests (default prom.DefaultFailed): a canary shown to fail more
	// often than its baseline raises traffic-parity, as the judge's
	// --errors-metric does.
	ErrorsMetric string `yaml:"errorsMetric"`
	Errors       string `yaml:"errors"`
	// Overrides of the defaults for this canary only.
	verdict.Overrides `yaml:",inline"`
}

// Load reads a configuration file strictly: unknown keys are errors, so a
// misspelt threshold cannot silently keep its default.
func Load(data []byte) (File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); errors.Is(err, io.EOF) {
		return File{}, errors.New("read rule pack config: the file is empty (or only comments); see rules/pairwise.yaml")
	} else if err != nil {
		return File{}, fmt.Errorf("read rule pack config: %s", yamlTypes.Replace(err.Error()))
	}
	return f, nil
}

// yamlTypes names the config's sections where the YAML decoder names Go
// types ("field x not found in type rulegen.Canary").
var yamlTypes = strings.NewReplacer(
	"type rulegen.File", "the config's top level (defaults, runbookBase, queryOffset, generic, canaries)",
	"type rulegen.Generic", "a generic group (generic:)",
	"type rulegen.Canary", "a canary (canaries:)",
	"type verdict.Overrides", "defaults",
)

// canaryName is what a canary label value and a rule group suffix may be.
var canaryName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// resolved is a validated canary with its effective configuration.
type resolved struct {
	Canary
	config           verdict.Config
	kind             prom.Kind
	baseline, canary selector.Selector
	// queryOffset is the groups' query_offset in seconds (File.QueryOffset):
	// the alerts' annotation queries, which Prometheus runs at the
	// evaluation time itself, read the recorded minutes that far back.
	queryOffset int
	// generic is the label-driven group recording the canary's minutes,
	// nil when its own group records them; identity then holds the
	// equality matchers of its identifying labels, in the group's order.
	generic  *resolvedGeneric
	identity selector.Selector
	// failed selects the failed requests of Canary.ErrorsMetric, nil
	// without one.
	failed selector.Selector
	// every holds the identifying labels when this is not one canary but
	// every canary of a generic group that judges them all (JudgeEvery):
	// the expressions then keep these labels instead of summing them away.
	every []string
}

// resolvedGeneric is a validated generic group.
type resolvedGeneric struct {
	Generic
	kind prom.Kind
	// sel selects both fleets of every canary: FleetLabel=~"baseline|canary"
	// (values regex-escaped) and the extra matchers on other labels.
	sel selector.Selector
	// narrow are the extra matchers that take canaries out of the group
	// (service!="checkout": != or !~ on an identifying label). They narrow
	// the raw reads only: a canary's own selector fixes those labels.
	narrow selector.Selector
	// present requires each of By to be set: the group's raw reads select
	// sel and present (raw), what a canary's selector names is sel alone.
	present selector.Selector
	// defaults is the file's configuration, which a group judging every
	// canary (JudgeEvery) judges under.
	defaults verdict.Config
	// queryOffset is the groups' query_offset in seconds (File.QueryOffset).
	queryOffset int
}

// reservedLabels are labels the pack sets itself, which a generic group
// cannot use to identify a canary or a fleet.
var reservedLabels = map[string]string{
	"canary":                   "the pack's canary label",
	"le":                       "the bucket bound of classic histograms",
	prom.RecordedSelectorLabel: "the pack's label of a fleet selector",
	prom.RecordedScrapeLabel:   "the pack's label of the scrape interval its minutes were read at",
	prom.RecordedMatchersLabel: "the pack's label of a generic group's other matchers",
	prom.HealthLabel:           "the pack's label of a health figure",
	genericLabel:               "the pack's label of a generic group judging every canary",
	"fleet":                    "the pack's label of a canary's fleet (a per-canary group's records carry it)",
	"missing_fleet":            "the label of PairwiseCanaryFleetMissing naming the fleet that is missing",
	"alertname":                "Prometheus's label of an alert's name",
	"scraped_fleet":            "the pack's label of the fleet a scrape-interval alert names",
	termLabel:                  "the pack's label of an evidence term",
	recentLabel:                "the pack's label of a recent run's length",
	quantileLabel:              "the pack's label of a voting quantile",
	heldLabel:                  "the pack's label of a held promotion",
	flagLabel:                  "the pack's label of a flag",
	"severity":                 "the alerts' severity label",
	"action":                   "the alerts' action label",
	"__name__":                 "the metric name",
}

// validLabelName checks a label name as pkg/selector parses it.
func validLabelName(name string) error {
	sel, err := selector.Parse("{" + name + `="x"}`)
	if err != nil || len(sel) != 1 || sel[0].Name != name {
		return fmt.Errorf("%q is not a label name: use letters, digits and '_', not starting with a digit (a UTF-8 name such as service.name can select fleets in matchers, not name an identifying label: these become the alerts' labels)", name)
	}
	if why, ok := reservedLabels[name]; ok {
		return fmt.Errorf("label %s is %s", name, why)
	}
	return nil
}

func (g Generic) resolve() (*resolvedGeneric, error) {
	r := &resolvedGeneric{Generic: g}
	if !canaryName.MatchString(g.Name) {
		return nil, fmt.Errorf("name: %q must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", g.Name)
	}
	if err := prom.ValidHistogramName(g.Metric); err != nil {
		return nil, fmt.Errorf("metric: %w", err)
	}
	switch prom.Kind(g.Histogram) {
	case prom.Native, prom.Classic:
		r.kind = prom.Kind(g.Histogram)
	default:
		return nil, fmt.Errorf("histogram: %q must be native or classic", g.Histogram)
	}
	if len(g.By) == 0 {
		return nil, errors.New("by: list the labels that identify a canary, such as [namespace, service]")
	}
	seen := map[string]bool{}
	for _, l := range append(slices.Clone(g.By), g.FleetLabel) {
		field := "by"
		if len(seen) == len(g.By) {
			field = "fleetLabel"
		}
		if err := validLabelName(l); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if seen[l] {
			return nil, fmt.Errorf("%s: label %s is listed twice (by and fleetLabel must be distinct labels)", field, l)
		}
		seen[l] = true
	}
	for field, v := range map[string]string{"baseline": g.Baseline, "canary": g.Canary} {
		if v == "" {
			return nil, fmt.Errorf("%s: give the value of %s that marks the %s fleet", field, g.FleetLabel, field)
		}
	}
	if g.Baseline == g.Canary {
		return nil, fmt.Errorf("canary: %q is also the baseline's value of %s", g.Canary, g.FleetLabel)
	}
	extra := selector.Selector{}
	if strings.TrimSpace(g.Matchers) != "" {
		var err error
		if extra, err = selector.Parse(g.Matchers); err != nil {
			return nil, fmt.Errorf("matchers: %w", err)
		}
		var others selector.Selector
		for _, m := range extra {
			switch {
			case slices.Contains(g.By, m.Name) && (m.Op == selector.NotEqual || m.Op == selector.NotRegexp):
				r.narrow = append(r.narrow, m) // takes canaries out of the group
			case seen[m.Name] || m.Name == "le":
				return nil, fmt.Errorf("matchers: label %s is set by the group itself (by, fleetLabel or le); only != and !~ may narrow an identifying label, to take canaries out of the group", m.Name)
			default:
				others = append(others, m)
			}
		}
		extra = others
	}
	if g.JudgeEvery && r.kind != prom.Native {
		return nil, errors.New("judgeEvery: needs native histograms (classic le buckets cannot be cut at a threshold per canary in one rule); judge classic canaries one by one (generic: on each canary)")
	}
	fleets := selector.Matcher{Name: g.FleetLabel, Op: selector.Regex, Value: regexp.QuoteMeta(g.Baseline) + "|" + regexp.QuoteMeta(g.Canary)}
	// A series without one of the identifying labels belongs to no canary:
	// summed by the labels, it would merge with every other such series
	// into one canary with an empty name, whose alert no route can tell.
	for _, l := range g.By {
		r.present = append(r.present, selector.Matcher{Name: l, Op: selector.NotEqual, Value: ""})
	}
	r.sel = append(selector.Selector{fleets}, extra...)
	return r, nil
}

// raw is what the group's raw reads select: both fleets of every canary
// whose series carry every identifying label.
func (g *resolvedGeneric) raw() selector.Selector {
	return append(append(slices.Clone(g.sel), g.narrow...), g.present...)
}

// by are the labels a generic group's recorded series keep.
func (g *resolvedGeneric) by() []string { return append(slices.Clone(g.By), g.FleetLabel) }

// fleet is the selector of one fleet of the canary identity: what a
// canary's own selector would be.
func (g *resolvedGeneric) fleet(identity selector.Selector, value string) selector.Selector {
	out := append(slices.Clone(identity), selector.Matcher{Name: g.FleetLabel, Op: selector.Equal, Value: value})
	return append(out, g.sel[1:]...)
}

// resolveGeneric validates the generic groups: unique names, and one group
// per recorded series name (two groups recording the same series for the
// same labels would collide).
func (f File) resolveGeneric() ([]*resolvedGeneric, error) {
	var out []*resolvedGeneric
	names, records := map[string]bool{}, map[string]string{}
	for i, g := range f.Generic {
		r, err := g.resolve()
		if err != nil {
			name := g.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return nil, fmt.Errorf("generic %s: %w", name, err)
		}
		if names[g.Name] {
			return nil, fmt.Errorf("generic %s: name: used by an earlier generic group; names must be unique", g.Name)
		}
		names[g.Name] = true
		record := prom.MinuteHistogramRecord(g.Metric, r.kind)
		if other, ok := records[record]; ok {
			return nil, fmt.Errorf("generic %s: metric: generic group %s records %s already; judge both conventions in one group", g.Name, other, record)
		}
		records[record] = g.Name
		out = append(out, r)
	}
	return out, nil
}

// resolve validates the file and returns each canary with its configuration
// and the generic groups. Every error names the canary or group and the field.
func (f File) resolve() ([]resolved, []*resolvedGeneric, error) {
	if len(f.Canaries) == 0 && len(f.Generic) == 0 {
		return nil, nil, errors.New("canaries: the config lists no canary")
	}
	if err := checkRunbookBase(f.RunbookBase); err != nil {
		return nil, nil, err
	}
	offset, err := f.queryOffset()
	if err != nil {
		return nil, nil, err
	}
	defaults := f.Defaults.Apply(verdict.Default())
	if err := validPackConfig(defaults); err != nil {
		return nil, nil, fmt.Errorf("defaults: %w", err)
	}
	generic, err := f.resolveGeneric()
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]*resolvedGeneric{}
	for _, g := range generic {
		byName[g.Name] = g
		g.defaults, g.queryOffset = defaults, offset
		if g.JudgeEvery && defaults.Rule == verdict.RuleReference {
			return nil, nil, fmt.Errorf("generic %s: judgeEvery: judges by the evidence rule; the defaults' rule is %s", g.Name, defaults.Rule)
		}
	}
	seen := map[string]bool{}
	out := make([]resolved, 0, len(f.Canaries))
	for i, c := range f.Canaries {
		r, err := c.resolve(defaults, byName)
		if err != nil {
			name := c.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return nil, nil, fmt.Errorf("canary %s: %w", name, err)
		}
		if seen[c.Name] {
			return nil, nil, fmt.Errorf("canary %s: name: used by an earlier canary; names must be unique", c.Name)
		}
		if g, ok := byName[strings.TrimPrefix(c.Name, "generic-")]; ok && c.Name == "generic-"+g.Name {
			return nil, nil, fmt.Errorf("canary %s: name: its group pairwise-%s would have the name of generic %s's group", c.Name, c.Name, g.Name)
		}
		seen[c.Name] = true
		r.queryOffset = offset
		out = append(out, r)
	}
	return out, generic, nil
}

func (c Canary) resolve(defaults verdict.Config, generic map[string]*resolvedGeneric) (resolved, error) {
	r := resolved{Canary: c}
	if !canaryName.MatchString(c.Name) {
		return r, fmt.Errorf("name: %q must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", c.Name)
	}
	if c.Generic != "" || c.Labels != nil {
		if err := r.fromGeneric(generic); err != nil {
			return r, err
		}
		c = r.Canary
	}
	if err := prom.ValidHistogramName(c.Metric); err != nil {
		return r, fmt.Errorf("metric: %w", err)
	}
	var err error
	if r.baseline, err = parseFleet(c.Baseline); err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	if r.canary, err = parseFleet(c.Canary); err != nil {
		return r, fmt.Errorf("canary: %w", err)
	}
	if err := selector.Apart(r.baseline, r.canary); err != nil {
		return r, err
	}
	switch prom.Kind(c.Histogram) {
	case prom.Native, prom.Classic:
		r.kind = prom.Kind(c.Histogram)
	default:
		return r, fmt.Errorf("histogram: %q must be native or classic (the rule pack cannot fall back at run time as the judge's auto does)", c.Histogram)
	}
	r.config = c.Overrides.Apply(defaults)
	if err := validPackConfig(r.config); err != nil {
		return r, err
	}
	switch {
	case c.ErrorsMetric == "" && c.Errors != "":
		return r, errors.New("errors: give errorsMetric, the request counter whose failed requests it selects")
	case c.ErrorsMetric == "":
	case r.generic != nil:
		return r, errors.New("errorsMetric: a canary of a generic group is read from the group's records, which hold no request counter; give it its own selectors (metric, baseline, canary) to compare error ratios")
	default:
		if err := prom.ValidCounterName(c.ErrorsMetric); err != nil {
			return r, fmt.Errorf("errorsMetric: %w", err)
		}
		if r.failed, err = prom.ParseFailed(c.Errors); err != nil {
			return r, fmt.Errorf("errors: %w", err)
		}
		if err := prom.CheckFailed(r.failed, r.baseline, r.canary); err != nil {
			return r, fmt.Errorf("errors: %w", err)
		}
	}
	return r, nil
}

// fromGeneric fills in a canary of a generic group: its metric, kind and
// fleet selectors follow from the group and the values of its labels.
func (r *resolved) fromGeneric(generic map[string]*resolvedGeneric) error {
	c := r.Canary
	g, ok := generic[c.Generic]
	if !ok && c.Generic == "" {
		return fmt.Errorf("labels: only a canary of a generic group has labels (they are its generic group's label values); a canary with selectors of its own is told apart by its name, the alerts' canary label")
	}
	if !ok {
		return fmt.Errorf("generic: %q names no generic group of the config", c.Generic)
	}
	if g.JudgeEvery {
		return fmt.Errorf("generic: generic %s judges every canary of its convention (judgeEvery) under the defaults; a canary with settings of its own needs a generic group without judgeEvery or selectors of its own", g.Name)
	}
	if c.Metric != "" || c.Histogram != "" || c.Baseline != "" || c.Canary != "" {
		return errors.New("metric, histogram, baseline and canary come from the generic group; leave them out")
	}
	for name := range c.Labels {
		if !slices.Contains(g.By, name) {
			return fmt.Errorf("labels: %s is not one of generic %s's identifying labels %v", name, g.Name, g.By)
		}
	}
	if c.Overrides.ScrapeIntervalSeconds != nil && *c.Overrides.ScrapeIntervalSeconds != g.defaults.ScrapeIntervalSeconds {
		// The group reads every canary's minutes at once, at the
		// defaults' interval: a canary's own would judge minutes read
		// at another.
		return fmt.Errorf("scrapeIntervalSeconds: generic %s reads its canaries' minutes at the defaults' %d s; set it under defaults:, or give the canary selectors of its own", g.Name, g.defaults.ScrapeIntervalSeconds)
	}
	r.generic = g
	for _, name := range g.By {
		v, ok := c.Labels[name]
		if !ok || v == "" {
			return fmt.Errorf("labels: give the value of %s (generic %s identifies a canary by %v)", name, g.Name, g.By)
		}
		m := selector.Matcher{Name: name, Op: selector.Equal, Value: v}
		for _, n := range g.narrow {
			if n.Name == name && !n.Accepts(v) {
				return fmt.Errorf("labels: %s=%q is taken out of generic %s by its matchers %s", name, v, g.Name, selector.Selector{n})
			}
		}
		r.identity = append(r.identity, m)
	}
	r.Canary.Metric, r.Canary.Histogram = g.Metric, g.Histogram
	r.Canary.Baseline, r.Canary.Canary = g.fleet(r.identity, g.Baseline).String(), g.fleet(r.identity, g.Canary).String()
	return nil
}

// validPackConfig is a configuration the pack can render: a valid one,
// and under the evidence rule a window of 2 minutes or more (the pack reads
// the recent runs shorter than the window, and a 1-minute window has none).
func validPackConfig(c verdict.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Rule == verdict.RuleEvidence && c.WindowMinutes < 2 {
		return fmt.Errorf("windowMinutes %d: the evidence rule's pack needs a window of 2 minutes or more", c.WindowMinutes)
	}
	return nil
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

// maxQueryOffset bounds File.QueryOffset: an alert delayed by more is late
// for a rollback, and the alerts' descriptions look their recorded minutes
// up at the evaluation time itself, within Prometheus's 5-minute lookback.
const maxQueryOffset = 4 * time.Minute

// queryOffset is File.QueryOffset in whole seconds (0: none).
func (f File) queryOffset() (int, error) {
	if f.QueryOffset == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(f.QueryOffset)
	if err != nil || d < 0 || d > maxQueryOffset || d%time.Second != 0 {
		return 0, fmt.Errorf("queryOffset: %q is not a whole number of seconds from 0s to %s, such as 10s or 1m", f.QueryOffset, maxQueryOffset)
	}
	return int(d / time.Second), nil
}

// checkRunbookBase accepts an absolute http(s) URL without spaces, control
// characters or template actions ("" is DefaultRunbookBase): it is written
// into every alert's runbook_url, which Prometheus expands as a template.
func checkRunbookBase(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.ContainsAny(s, " \t\r\n{}") || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("runbookBase: %q is not an absolute http(s) URL without spaces or braces", s)
	}
	return nil
}
