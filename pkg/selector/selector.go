// Package selector parses the label-matcher selectors users give for a fleet
// ({service="checkout",track="canary"}) and renders them back in canonical form.
//
// User text never reaches PromQL as typed: a selector is parsed into matchers,
// anything that is not a pure list of label matchers is rejected, and the
// PromQL that Pairwise sends is rendered from the parsed matchers.
package selector

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Op is a label-matching operator.
type Op string

// The four operators Prometheus selectors allow.
const (
	Equal     Op = "="
	NotEqual  Op = "!="
	Regex     Op = "=~"
	NotRegexp Op = "!~"
)

// Matcher is one label matcher.
type Matcher struct {
	Name  string
	Op    Op
	Value string
}

// Selector is a parsed list of label matchers.
type Selector []Matcher

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Parse accepts `{name op "value", ...}` and nothing else. A metric name in
// front of the braces, a __name__ matcher, functions, operators, ranges and
// trailing text are rejected, as is a selector that matches nothing specific
// (every matcher matching the empty string), which Prometheus also rejects.
func Parse(text string) (Selector, error) {
	p := &parser{in: strings.TrimSpace(text)}
	sel, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("invalid selector %q: %w", text, err)
	}
	return sel, nil
}

// ParseNarrowing is Parse for matchers that narrow another selector (the
// failed requests of a fleet: {code!~"2..|3.."}): every matcher may also
// match series without its label, since the selector they are added to
// has a matcher that must match.
func ParseNarrowing(text string) (Selector, error) {
	p := &parser{in: strings.TrimSpace(text), narrowing: true}
	sel, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("invalid selector %q: %w", text, err)
	}
	return sel, nil
}

type parser struct {
	in        string
	pos       int
	narrowing bool // ParseNarrowing: matchers that may all match the empty string
}

func (p *parser) parse() (Selector, error) {
	if p.in == "" {
		return nil, fmt.Errorf("it is empty; write label matchers such as {service=\"checkout\",track=\"canary\"}")
	}
	if p.in[0] != '{' {
		return nil, fmt.Errorf("it must start with '{' and hold only label matchers, such as {track=\"canary\"}")
	}
	p.pos = 1
	var sel Selector
	for {
		p.skipSpace()
		if p.peek() == '}' {
			p.pos++
			break
		}
		if len(sel) > 0 {
			if p.peek() != ',' {
				return nil, fmt.Errorf("expected ',' or '}' at offset %d", p.pos)
			}
			p.pos++
			p.skipSpace()
			if p.peek() == '}' { // trailing comma, as Prometheus allows
				p.pos++
				break
			}
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		sel = append(sel, m)
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, fmt.Errorf("unexpected text %q after the closing '}'", p.in[p.pos:])
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("it has no label matchers; a fleet needs at least one, such as {track=\"canary\"}")
	}
	if err := sel.validate(p.narrowing); err != nil {
		return nil, err
	}
	return sel, nil
}

func (p *parser) matcher() (Matcher, error) {
	start := p.pos
	for p.pos < len(p.in) && isNameByte(p.in[p.pos]) {
		p.pos++
	}
	name := p.in[start:p.pos]
	if name == "" && (p.peek() == '"' || p.peek() == '\'' || p.peek() == '`') {
		// Prometheus 3's quoted (UTF-8) label name, such as "service.name".
		quoted, err := p.quoted()
		if err != nil {
			return Matcher{}, fmt.Errorf("label name at offset %d: %w", start, err)
		}
		if err := ValidLabelName(quoted); err != nil {
			return Matcher{}, fmt.Errorf("at offset %d: %w", start, err)
		}
		name = quoted
	} else if !labelName.MatchString(name) {
		return Matcher{}, fmt.Errorf("expected a label name at offset %d", start)
	}
	p.skipSpace()
	var op Op
	switch {
	case strings.HasPrefix(p.in[p.pos:], "=~"):
		op = Regex
	case strings.HasPrefix(p.in[p.pos:], "!~"):
		op = NotRegexp
	case strings.HasPrefix(p.in[p.pos:], "!="):
		op = NotEqual
	case strings.HasPrefix(p.in[p.pos:], "="):
		op = Equal
	default:
		return Matcher{}, fmt.Errorf("expected one of = != =~ !~ after label %q", name)
	}
	p.pos += len(op)
	p.skipSpace()
	value, err := p.quoted()
	if err != nil {
		return Matcher{}, fmt.Errorf("value of label %q: %w", name, err)
	}
	return Matcher{Name: name, Op: op, Value: value}, nil
}

// quoted reads a double-, single- or back-quoted string as PromQL does.
func (p *parser) quoted() (string, error) {
	if p.pos >= len(p.in) {
		return "", fmt.Errorf("missing quoted value")
	}
	q := p.in[p.pos]
	if q != '"' && q != '\'' && q != '`' {
		return "", fmt.Errorf("expected a quoted string at offset %d", p.pos)
	}
	end := p.pos + 1
	for end < len(p.in) && p.in[end] != q {
		if p.in[end] == '\\' && q != '`' {
			end++
		}
		end++
	}
	if end >= len(p.in) {
		return "", fmt.Errorf("unterminated string starting at offset %d", p.pos)
	}
	raw := p.in[p.pos : end+1]
	p.pos = end + 1
	if q == '`' {
		return raw[1 : len(raw)-1], nil
	}
	if q == '\'' { // strconv only unquotes single characters in single quotes
		raw = `"` + strings.ReplaceAll(strings.ReplaceAll(raw[1:len(raw)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	s, err := strconv.Unquote(raw)
	if err != nil {
		return "", fmt.Errorf("bad escape in %s", raw)
	}
	return s, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.in) && strings.ContainsRune(" \t\r\n", rune(p.in[p.pos])) {
		p.pos++
	}
}

func (p *parser) peek() byte {
	if p.pos >= len(p.in) {
		return 0
	}
	return p.in[p.pos]
}

func isNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func (s Selector) validate(narrowing bool) error {
	allMatchEmpty := true
	for _, m := range s {
		if m.Name == "__name__" {
			return fmt.Errorf("__name__ is set by the metric, not by a fleet selector")
		}
		if m.Op == Regex || m.Op == NotRegexp {
			if _, err := m.regexp(); err != nil {
				return fmt.Errorf("regular expression for label %q does not compile: %w", m.Name, err)
			}
		}
		if !m.accepts("") {
			allMatchEmpty = false
		}
	}
	if allMatchEmpty && !narrowing {
		return fmt.Errorf("every matcher also matches series without the label; add one that must match, such as track=\"canary\"")
	}
	return nil
}

// String renders the selector canonically: `{a="x",b=~"y"}` with values
// escaped by strconv.Quote, so the output is always valid PromQL. A label
// name outside the classic syntax is quoted, as Prometheus 3 writes it:
// `{"service.name"="checkout"}`.
func (s Selector) String() string {
	return s.render("")
}

// With returns the selector's matchers inside a series selector for metric,
// for example http_request_duration_seconds_bucket{service="checkout"}, or
// {"http.server.request.duration_bucket",service="checkout"} for a metric
// name outside the classic syntax (Prometheus 3's UTF-8 names).
// The metric name must already be validated with ValidMetricName.
func (s Selector) With(metric string) string {
	if ClassicMetricName(metric) {
		return metric + s.String()
	}
	return s.render(strconv.Quote(metric))
}

// render writes the braces, led by a quoted metric name when there is one.
func (s Selector) render(quotedMetric string) string {
	var b strings.Builder
	b.WriteByte('{')
	b.WriteString(quotedMetric)
	for i, m := range s {
		if i > 0 || quotedMetric != "" {
			b.WriteByte(',')
		}
		b.WriteString(QuoteLabelName(m.Name))
		b.WriteString(string(m.Op))
		b.WriteString(strconv.Quote(m.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// QuoteLabelName writes a label name for PromQL: as it is in the classic
// syntax, quoted otherwise (Prometheus 3: sum by ("service.name") (...)).
// The name must already be validated with ValidLabelName.
func QuoteLabelName(name string) string {
	if labelName.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// ClassicMetricName tells whether name is a metric name of Prometheus's
// classic syntax, which PromQL writes unquoted.
func ClassicMetricName(name string) bool { return metricName.MatchString(name) }

// ValidMetricName checks a metric name: Prometheus's classic syntax, or a
// UTF-8 name as Prometheus 3 accepts it quoted (an OpenTelemetry name such as
// http.server.request.duration), within the characters utf8Name allows.
func ValidMetricName(name string) error {
	if metricName.MatchString(name) || utf8Name(name) {
		return nil
	}
	return fmt.Errorf("invalid metric name %q: use letters, digits, '_' and ':', or a UTF-8 name of letters, digits and _ : . - / (such as http.server.request.duration), not starting with a digit", name)
}

// ValidLabelName checks a label name: the classic syntax, or a UTF-8 name as
// for ValidMetricName (such as service.name), which Pairwise quotes in PromQL.
func ValidLabelName(name string) error {
	if labelName.MatchString(name) || utf8Name(name) {
		return nil
	}
	return fmt.Errorf("invalid label name %q: use letters, digits and _, or a UTF-8 name of letters, digits and _ : . - / (such as service.name), not starting with a digit", name)
}

// utf8Name tells whether name is one of the UTF-8 names Pairwise accepts
// beyond the classic syntax: letters and digits of any script and the
// separators OpenTelemetry and its exporters use (_ : . - /), starting with a
// letter or _. Prometheus 3 quotes any UTF-8 string; Pairwise keeps to these
// so that a name never carries quotes, braces, spaces or template delimiters
// into the PromQL, rule files and alert texts it writes.
func utf8Name(name string) bool {
	if name == "" || !utf8.ValidString(name) {
		return false
	}
	for i, r := range name {
		switch {
		case unicode.IsLetter(r) || r == '_':
		case i > 0 && (unicode.IsDigit(r) || strings.ContainsRune(":.-/", r)):
		default:
			return false
		}
	}
	return true
}
