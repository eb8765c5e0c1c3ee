package rulegen

import (
	"slices"
	"strings"
	"testing"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

func httpServices() Generic {
	return Generic{Name: "http-services", Metric: "http_request_duration_seconds", Histogram: "native",
		By: []string{"namespace", "service"}, FleetLabel: "track", Baseline: "baseline", Canary: "canary", Matchers: `{job="api"}`}
}

func genericCanary(name, service string) Canary {
	return Canary{Name: name, Generic: "http-services", Labels: map[string]string{"namespace": "shop", "service": service}}
}

func TestGenericGroupReadsEveryCanaryOnce(t *testing.T) {
	for _, kind := range []string{"native", "classic"} {
		t.Run(kind, func(t *testing.T) {
			g := httpServices()
			g.Histogram = kind
			g.Canary = "canary.v2" // a value with a regex metacharacter
			rf := renderFile(t, File{Generic: []Generic{g}, Canaries: []Canary{genericCanary("checkout", "checkout")}})
			// One group: the generic reads, then the canary's rules, which
			// read the minute just recorded in the same evaluation.
			if len(rf.Groups) != 1 || rf.Groups[0].Name != "pairwise-generic-http-services" || rf.Groups[0].Interval != "1m" || len(rf.Groups[0].Rules) < 3 {
				t.Fatalf("want one generic group holding its reads and the canary's rules: %+v", rf.Groups)
			}
			k := prom.Kind(kind)
			// Series without an identifying label belong to no canary: the
			// reads require each (a canary named "shop/" from every series
			// lacking a service would merge them).
			sel := selector.Selector{{Name: "track", Op: selector.Regex, Value: `baseline|canary\.v2`}, {Name: "job", Op: selector.Equal, Value: "api"},
				{Name: "namespace", Op: selector.NotEqual, Value: ""}, {Name: "service", Op: selector.NotEqual, Value: ""}}
			by := []string{"namespace", "service", "track"}
			samples := `last_over_time(` + prom.MinuteSamplesRecord(g.Metric, k) + `{pairwise_generic="http-services"}[1m])`
			for i, want := range []struct {
				record, expr string
				labels       int
			}{
				// The minutes' records name their interval and the group's
				// other matchers, which a reader must match (prom.labelDriven).
				{prom.MinuteHistogramRecord(g.Metric, k), "last_over_time((" + prom.GroupedHistogramQuery(g.Metric, sel, k, by, prom.DefaultScrapeInterval) + ")[1m:1m])", 2},
				{prom.MinuteSamplesRecord(g.Metric, k), "last_over_time((" + prom.SamplesQuery(g.Metric, sel, k, by) + ")[1m:1m])", 1},
				{prom.MinuteHealthRecord(g.Metric, k), prom.HealthFromSamples(samples, sel, by, prom.DefaultScrapeInterval), 2},
			} {
				r := rf.Groups[0].Rules[i]
				if r.Record != want.record || spaced(r.Expr) != spaced(want.expr) || len(r.Labels) != want.labels ||
					want.labels == 2 && (r.Labels[prom.RecordedScrapeLabel] != "15s" || r.Labels[prom.RecordedMatchersLabel] != `{job="api"}`) {
					t.Errorf("generic rule %d: %s %v\n%s\nwant %s of %s", i, r.Record, r.Labels, oneLine(r.Expr), want.record, want.expr)
				}
			}
			if !strings.Contains(rf.Groups[0].Rules[0].Expr, `sum by (namespace, service, track`) {
				t.Errorf("the generic read does not keep the identifying and fleet labels:\n%s", rf.Groups[0].Rules[0].Expr)
			}
			// The canary's group reads only the recorded minutes, by its labels.
			hists := prom.MinuteHistogramRecord(g.Metric, k)
			for _, r := range rf.Groups[0].Rules[3:] {
				e := oneLine(r.Expr)
				if rawSubquery.MatchString(e) || strings.Contains(e, ":1m]") {
					t.Errorf("%s%s reads raw series or a subquery:\n%.300s", r.Record, r.Alert, e)
				}
				if strings.Contains(e, hists+"{") && !strings.Contains(e, hists+`{namespace="shop",service="checkout",track="baseline"`) && !strings.Contains(e, hists+`{namespace="shop",service="checkout",track="canary.v2"`) {
					t.Errorf("%s reads the recorded minutes by other labels:\n%.300s", r.Record, e)
				}
				if r.Alert != "" && (r.Labels["canary"] != "checkout" || r.Labels["namespace"] != "shop" || r.Labels["service"] != "checkout") {
					t.Errorf("alert %s lacks the canary's identifying labels: %v", r.Alert, r.Labels)
				}
			}
		})
	}
}

// The grouped read is the engine's query kept apart by labels: without
// labels it is the very text of prom.NativeQuery and ClassicQuery.
func TestGroupedQueriesAreTheEngineQueries(t *testing.T) {
	sel, _ := selector.Parse(`{service="checkout",track="canary"}`)
	const m = "http_request_duration_seconds"
	for _, k := range []prom.Kind{prom.Native, prom.Classic} {
		want := prom.NativeQuery(m, sel, prom.DefaultScrapeInterval)
		if k == prom.Classic {
			want = prom.ClassicQuery(m, sel, prom.DefaultScrapeInterval)
		}
		if got := prom.GroupedHistogramQuery(m, sel, k, nil, prom.DefaultScrapeInterval); got != want {
			t.Errorf("%s histogram: %s\nwant %s", k, got, want)
		}
	}
}

func TestGenericValidation(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*File)
		want string
	}{
		{"bad name", func(f *File) { f.Generic[0].Name = "http services" }, `generic http services: name:`},
		{"UTF-8 identifying label", func(f *File) { f.Generic[0].By = []string{"service.name"} }, "generic http-services: by: \"service.name\" is not a label name"},
		{"bad metric", func(f *File) { f.Generic[0].Metric = "http latency" }, "generic http-services: metric:"},
		{"bucket metric", func(f *File) { f.Generic[0].Metric += "_bucket" }, "generic http-services: metric: give the histogram name without _bucket"},
		{"auto histogram", func(f *File) { f.Generic[0].Histogram = "auto" }, "generic http-services: histogram:"},
		{"no by", func(f *File) { f.Generic[0].By = nil }, "generic http-services: by: list the labels"},
		{"bad label", func(f *File) { f.Generic[0].By = []string{"name-space"} }, `generic http-services: by: "name-space" is not a label name`},
		{"injected label", func(f *File) { f.Generic[0].By = []string{`service="x",a`} }, "is not a label name"},
		{"reserved label", func(f *File) { f.Generic[0].By = []string{"canary"} }, "generic http-services: by: label canary is the pack's canary label"},
		// A per-canary group's records carry fleet="baseline"|"canary": a
		// group by fleet would read them as one more canary's.
		{"fleet as the fleet label", func(f *File) { f.Generic[0].FleetLabel = "fleet" }, "generic http-services: fleetLabel: label fleet is the pack's label of a canary's fleet"},
		{"an alert's label", func(f *File) { f.Generic[0].By = []string{"namespace", "severity"} }, "generic http-services: by: label severity is the alerts' severity label"},
		{"le fleet label", func(f *File) { f.Generic[0].FleetLabel = "le" }, "generic http-services: fleetLabel: label le is the bucket bound"},
		// The fleet-missing alert's label and the alert's name would be
		// overwritten by the canary's own value.
		{"missing_fleet", func(f *File) { f.Generic[0].By = []string{"namespace", "missing_fleet"} }, "by: label missing_fleet is the label of PairwiseCanaryFleetMissing"},
		{"alertname", func(f *File) { f.Generic[0].By = []string{"alertname"} }, "by: label alertname is Prometheus's label"},
		{"fleet label also by", func(f *File) { f.Generic[0].FleetLabel = "service" }, "generic http-services: fleetLabel: label service is listed twice"},
		{"no canary value", func(f *File) { f.Generic[0].Canary = "" }, "generic http-services: canary: give the value of track"},
		{"same values", func(f *File) { f.Generic[0].Canary = "baseline" }, `generic http-services: canary: "baseline" is also the baseline's`},
		{"bad matchers", func(f *File) { f.Generic[0].Matchers = `{job="api"} or vector(1)` }, "generic http-services: matchers: invalid selector"},
		{"matcher on by label", func(f *File) { f.Generic[0].Matchers = `{service="checkout"}` }, "generic http-services: matchers: label service is set by the group"},
		{"regex on by label", func(f *File) { f.Generic[0].Matchers = `{service=~"check.*"}` }, "only != and !~ may narrow an identifying label"},
		{"negative matcher on the fleet label", func(f *File) { f.Generic[0].Matchers = `{job="api",track!="canary"}` }, "generic http-services: matchers: label track is set by the group"},
		{"listed canary taken out", func(f *File) { f.Generic[0].Matchers = `{job="api",service!="checkout"}` }, `canary checkout: labels: service="checkout" is taken out of generic http-services by its matchers {service!="checkout"}`},
		// The group reads every canary's minutes at the defaults' interval:
		// a canary's own was applied everywhere but there, and fleets
		// scraped at 60 s recorded no minute.
		{"canary's own scrape interval", func(f *File) { s := 60; f.Canaries[0].ScrapeIntervalSeconds = &s }, "canary checkout: scrapeIntervalSeconds: generic http-services reads its canaries' minutes at the defaults' 15 s"},
		{"two groups, one series", func(f *File) { g := httpServices(); g.Name = "other"; f.Generic = append(f.Generic, g) }, "generic other: metric: generic group http-services records"},
		{"group name taken", func(f *File) { f.Canaries[0].Name = "generic-http-services" }, "canary generic-http-services: name: its group pairwise-generic-http-services"},
		{"unknown group", func(f *File) { f.Canaries[0].Generic = "grpc" }, `canary checkout: generic: "grpc" names no generic group`},
		{"labels without a group", func(f *File) { f.Canaries[0].Generic = "" }, "canary checkout: labels: only a canary of a generic group has labels"},
		{"a request counter for a generic group's canary", func(f *File) { f.Canaries[0].ErrorsMetric = "http_requests_total" }, "canary checkout: errorsMetric: a canary of a generic group"},
		{"selector too", func(f *File) { f.Canaries[0].Baseline = `{track="baseline"}` }, "canary checkout: metric, histogram, baseline and canary come from the generic group"},
		{"missing label", func(f *File) { delete(f.Canaries[0].Labels, "namespace") }, "canary checkout: labels: give the value of namespace"},
		{"stray label", func(f *File) { f.Canaries[0].Labels["pod"] = "x" }, "canary checkout: labels: pod is not one of generic http-services's identifying labels"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := File{Generic: []Generic{httpServices()}, Canaries: []Canary{genericCanary("checkout", "checkout")}}
			tt.edit(&f)
			_, err := Render(f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Render error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestJudgeEvery: a generic group with judgeEvery judges every canary of its
// convention in its own group, after its two reads, from the recorded
// minutes only, kept apart by the identifying labels; the thresholds are
// cut with >/ (no scalar()), the records carry the group's label and the
// rollback alert the identifying labels and canary = their values joined.
func TestJudgeEvery(t *testing.T) {
	g := httpServices()
	g.JudgeEvery = true
	rf := renderFile(t, File{Generic: []Generic{g}})
	if len(rf.Groups) != 1 || rf.Groups[0].Name != "pairwise-generic-http-services" {
		t.Fatalf("want one generic group: %+v", rf.Groups)
	}
	rules := rf.Groups[0].Rules
	var records, alerts []string
	for _, r := range rules[3:] {
		e := oneLine(r.Expr)
		if rawSubquery.MatchString(e) || strings.Contains(e, ":1m]") || strings.Contains(e, "scalar(") {
			t.Errorf("%s%s reads raw series, a subquery or a scalar:\n%.300s", r.Record, r.Alert, e)
		}
		if r.Record != "" {
			records = append(records, r.Record)
			if r.Labels[genericLabel] != "http-services" || len(r.Labels) != 1 {
				t.Errorf("%s labels %v, want only %s=http-services", r.Record, r.Labels, genericLabel)
			}
		} else {
			alerts = append(alerts, r.Alert)
			severity, action := "critical", "rollback"
			if r.Alert != "PairwiseCanaryRollback" {
				severity, action = "warning", ""
			}
			if r.Labels["severity"] != severity || r.Labels["action"] != action || r.Labels[genericLabel] != "http-services" ||
				!strings.HasPrefix(e, `label_join(`) || !strings.Contains(strings.ReplaceAll(e, " ", ""), `"canary","/","namespace","service")`) {
				t.Errorf("alert %s: labels %v, expr %.200s", r.Alert, r.Labels, e)
			}
		}
	}
	if !strings.Contains(oneLine(rules[4].Expr), ">/") || !strings.Contains(oneLine(rules[4].Expr), "sum by (namespace, service) (") {
		t.Errorf("the counts are not cut per canary:\n%.400s", oneLine(rules[4].Expr))
	}
	want := []string{"evidence_inputs_1m", "evidence_counts_1m", "evidence_terms_1m", "evidence_residuals_1m", "evidence_changes_1m", "evidence_sums_60m", "recent_evidence_sums", "evidence_dispersion_60m", "evidence_60m", "recent_evidence"}
	for i := range want {
		want[i] = RecordName(g.Metric, want[i], false)
	}
	if !slices.Equal(records, want) || !slices.Equal(alerts, []string{"PairwiseCanaryRollback", "PairwiseCanaryScrapeInterval"}) {
		t.Errorf("records %v, alerts %v; want %v, the rollback and the scrape-interval alerts", records, alerts, want)
	}
}

func TestJudgeEveryRejects(t *testing.T) {
	classic := httpServices()
	classic.Histogram, classic.JudgeEvery = "classic", true
	every := httpServices()
	every.JudgeEvery = true
	reference := verdict.RuleReference
	for _, tt := range []struct {
		name string
		f    File
		want string
	}{
		{"classic", File{Generic: []Generic{classic}}, "judgeEvery: needs native histograms"},
		{"reference rule", File{Generic: []Generic{every}, Defaults: verdict.Overrides{Rule: &reference}}, "judgeEvery: judges by the evidence rule"},
		{"a canary names it", File{Generic: []Generic{every}, Canaries: []Canary{genericCanary("checkout", "checkout")}}, "judges every canary of its convention"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Render(tt.f); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Render: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestGenericNarrowingMatchers: a generic group's matchers may take
// canaries out with != or !~ on an identifying label (a service judged
// with thresholds of its own, listed under canaries:). They narrow the
// group's raw reads only: its records' pairwise_matchers label, which
// readers match against a canary's selector, and the judge command in its
// alerts hold the other matchers alone, so a reader of another service
// still finds the group's records. The config rules/README gives was
// refused before.
func TestGenericNarrowingMatchers(t *testing.T) {
	g := httpServices()
	g.JudgeEvery = true
	g.Matchers = `{job="api",service!="checkout"}`
	own := checkout("native")
	rf := renderFile(t, File{Generic: []Generic{g}, Canaries: []Canary{own}})
	var reads, labelled int
	for _, grp := range rf.Groups {
		if grp.Name != "pairwise-generic-http-services" {
			continue
		}
		for _, r := range grp.Rules {
			e := oneLine(r.Expr)
			if strings.Contains(e, "http_request_duration_seconds{") {
				reads++
				if !strings.Contains(e, `service!="checkout"`) {
					t.Errorf("%s reads raw series without the narrowing matcher:\n%.300s", r.Record, e)
				}
			}
			if m, ok := r.Labels[prom.RecordedMatchersLabel]; ok {
				labelled++
				if m != `{job="api"}` {
					t.Errorf("%s: %s=%q, want the other matchers alone", r.Record, prom.RecordedMatchersLabel, m)
				}
			}
			if r.Alert == "PairwiseCanaryRollback" && strings.Contains(r.Annotations["description"], "service!=") {
				t.Errorf("the rollback's judge command holds the narrowing matcher: %s", r.Annotations["description"])
			}
		}
	}
	if reads == 0 || labelled == 0 {
		t.Fatalf("the generic group has %d raw reads and %d records with %s", reads, labelled, prom.RecordedMatchersLabel)
	}
}
