package selector

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // canonical form; empty when an error is expected
		wantErr string
	}{
		{name: "two matchers", in: `{service="checkout",track="canary"}`, want: `{service="checkout",track="canary"}`},
		{name: "spaces and trailing comma", in: ` { service = "checkout" , track!="canary", } `, want: `{service="checkout",track!="canary"}`},
		{name: "regex", in: `{pod=~"checkout-[a-f0-9]+-.*"}`, want: `{pod=~"checkout-[a-f0-9]+-.*"}`},
		{name: "not regex with required label", in: `{app="x",pod!~"primary.*"}`, want: `{app="x",pod!~"primary.*"}`},
		{name: "single quotes", in: `{track='canary'}`, want: `{track="canary"}`},
		{name: "backquotes keep backslashes", in: "{pod=~`a\\d+`}", want: `{pod=~"a\\d+"}`},
		{name: "escaped quote stays inside the value", in: `{a="x\"} or vector(1) #"}`, want: `{a="x\"} or vector(1) #"}`},
		{name: "empty", in: ``, wantErr: "empty"},
		{name: "metric name in front", in: `up{job="x"}`, wantErr: "must start with '{'"},
		{name: "function", in: `rate({job="x"}[5m])`, wantErr: "must start with '{'"},
		{name: "trailing expression", in: `{job="x"} or vector(1)`, wantErr: "unexpected text"},
		{name: "range", in: `{job="x"}[5m]`, wantErr: "unexpected text"},
		{name: "no matchers", in: `{}`, wantErr: "no label matchers"},
		{name: "unquoted value", in: `{job=x}`, wantErr: "quoted string"},
		{name: "unterminated", in: `{job="x}`, wantErr: "unterminated"},
		{name: "bad operator", in: `{job=="x"}`, wantErr: "quoted string"},
		{name: "missing comma", in: `{a="x" b="y"}`, wantErr: "expected ','"},
		{name: "bad label name", in: `{1a="x"}`, wantErr: "label name"},
		{name: "quoted UTF-8 label name", in: `{"service.name"="checkout", 'k8s.pod.name'=~"checkout-.*"}`, want: `{"service.name"="checkout","k8s.pod.name"=~"checkout-.*"}`},
		{name: "quoted classic label name", in: `{"track"="canary"}`, want: `{track="canary"}`},
		{name: "quoted name of another script", in: `{"größe.klasse"="m"}`, want: `{"größe.klasse"="m"}`},
		// Escapes are read as strconv reads them (the editor reads them alike).
		{name: "quoted label name with an escape", in: `{"service\x2ename"="checkout"}`, want: `{"service.name"="checkout"}`},
		{name: "quoted label name escaped into a digit", in: `{"\u0031x"="y"}`, wantErr: "invalid label name"},
		{name: "quoted label name with a bad escape", in: `{"a\.b"="x"}`, wantErr: "bad escape"},
		{name: "quoted label name with a quote", in: `{"a\"b"="x"}`, wantErr: "invalid label name"},
		{name: "quoted label name with braces", in: `{"{{ .x }}"="x"}`, wantErr: "invalid label name"},
		{name: "quoted label name with a space", in: `{"a b"="x"}`, wantErr: "invalid label name"},
		{name: "quoted empty label name", in: `{""="x"}`, wantErr: "invalid label name"},
		{name: "quoted label name misquoted", in: `{"service.name="x"}`, wantErr: "invalid label name"},
		{name: "quoted name label", in: `{"__name__"="up"}`, wantErr: "__name__"},
		{name: "quoted metric name alone", in: `{"http.server.request.duration"}`, wantErr: "expected one of"},
		{name: "name label", in: `{__name__="up"}`, wantErr: "__name__"},
		{name: "regex does not compile", in: `{a=~"("}`, wantErr: "does not compile"},
		{name: "all matchers match empty", in: `{a=~".*"}`, wantErr: "every matcher"},
		{name: "not-equal alone matches empty", in: `{a!="x"}`, wantErr: "every matcher"},
		{name: "bad escape", in: `{a="\q"}`, wantErr: "bad escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got.String() != tt.want {
				t.Fatalf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
			}
			again, err := Parse(got.String())
			if err != nil || again.String() != got.String() {
				t.Fatalf("canonical form does not round-trip: %s -> %v, %v", got, again, err)
			}
		})
	}
}

func TestValidMetricName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"http_request_duration_seconds", true},
		{"job:latency:rate1m", true},
		{"", false},
		{"9lives", false},
		{"up or vector(1)", false},
		{"a{b=\"c\"}", false},
		{"http.server.request.duration", true},
		{"http.server.request.duration_seconds", true},
		{"rpc/server-duration", true},
		{"größe", true},
		{".leading.dot", false},
		{"1.leading.digit", false},
		{"a\"b", false},
		{"{{ .Labels }}", false},
		{"a b", false},
		{"a\nb", false},
		{"\xff", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidMetricName(tt.name); (err == nil) != tt.ok {
				t.Fatalf("ValidMetricName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
			}
		})
	}
}

// TestParseNarrowing: matchers added to another selector (a fleet's failed
// requests) may all match the empty string; everything else is Parse's.
func TestParseNarrowing(t *testing.T) {
	for in, want := range map[string]string{`{code!~"2..|3.."}`: `{code!~"2..|3.."}`, `{code=~"5.."}`: `{code=~"5.."}`, `{"http.response.status_code"=~"5.."}`: `{"http.response.status_code"=~"5.."}`} {
		got, err := ParseNarrowing(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseNarrowing(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`{code!~"2.."} or up`, `{}`, `{__name__="x"}`, `{a=~"("}`} {
		if _, err := ParseNarrowing(in); err == nil {
			t.Errorf("ParseNarrowing(%s) accepted it", in)
		}
	}
	if _, err := Parse(`{code!~"2..|3.."}`); err == nil || !strings.Contains(err.Error(), "every matcher") {
		t.Errorf("Parse accepted a fleet selector that matches every series without the label: %v", err)
	}
}

func TestWith(t *testing.T) {
	sel, err := Parse(`{"service.name"="checkout",track="canary"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ metric, want string }{
		{"http_request_duration_seconds", `http_request_duration_seconds{"service.name"="checkout",track="canary"}`},
		{"job:latency:rate1m", `job:latency:rate1m{"service.name"="checkout",track="canary"}`},
		// Prometheus 3 puts a UTF-8 metric name inside the braces, quoted.
		{"http.server.request.duration_bucket", `{"http.server.request.duration_bucket","service.name"="checkout",track="canary"}`},
	} {
		if got := sel.With(tt.metric); got != tt.want {
			t.Errorf("With(%q) = %s, want %s", tt.metric, got, tt.want)
		}
	}
	if got, want := (Selector{}).With("a.b"), `{"a.b"}`; got != want {
		t.Errorf("an empty selector With(a.b) = %s, want %s", got, want)
	}
}

func TestQuoteLabelName(t *testing.T) {
	for name, want := range map[string]string{"pod": "pod", "k8s.pod.name": `"k8s.pod.name"`, "le": "le", "a:b": `"a:b"`} {
		if got := QuoteLabelName(name); got != want {
			t.Errorf("QuoteLabelName(%q) = %s, want %s", name, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a.b"="c"}`, `{a="b"}`, `{a=~"x|y",b!="z",}`, `{a="\"}"}`, "{a=`x`}", `up{a="b"}`, `{`, `{a='b'}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sel, err := Parse(in)
		if err != nil {
			return
		}
		// Whatever parses renders to a canonical form that parses to itself.
		again, err := Parse(sel.String())
		if err != nil || again.String() != sel.String() {
			t.Fatalf("%q -> %s does not round-trip: %v", in, sel, err)
		}
		// A matcher's few values are values it accepts.
		for _, m := range sel {
			values, _ := m.values()
			if len(values) > maxValues {
				t.Fatalf("%s lists %d values", m, len(values))
			}
			for _, v := range values {
				if !m.accepts(v) {
					t.Fatalf("%s lists %q, which it does not accept", m, v)
				}
			}
		}
	})
}
