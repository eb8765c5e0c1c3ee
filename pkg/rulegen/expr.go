package rulegen

import "strings"

// expr is a PromQL expression tree just rich enough to print long generated
// expressions readably: binary operations and calls break over lines when
// they do not fit, leaves never do.
type expr interface {
	flat() string
	lines(indent string) []string
}

// maxWidth is the line width beyond which expressions are broken.
const maxWidth = 180

// maxIndent is the depth beyond which a long expression is wrapped as text
// at its spaces instead of being broken by its structure: deeper nesting is
// not made clearer by more indentation, only longer (the evidence rule's
// expressions would be mostly leading blanks).
const maxIndent = 16

// wrapped prints e flat, wrapped at maxWidth at spaces outside string
// literals (PromQL reads a line break as a space); nil when e fits or is
// not deep enough to be wrapped.
func wrapped(e expr, indent string) []string {
	f := e.flat()
	if len(indent) < maxIndent || len(indent)+len(f) <= maxWidth {
		return nil
	}
	var out []string
	for len(indent)+len(f) > maxWidth {
		cut := breakPoint(f, maxWidth-len(indent))
		if cut < 0 {
			break
		}
		out = append(out, indent+f[:cut])
		f = f[cut+1:]
	}
	return append(out, indent+f)
}

// breakPoint is the index of the last space of s at or before limit that is
// outside a string literal, else of the first after it; -1 if none.
func breakPoint(s string, limit int) int {
	best := -1
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == ' ':
			if i > limit && best >= 0 {
				return best
			}
			best = i
			if i > limit {
				return best
			}
		}
	}
	return best
}

// leaf is PromQL text printed as is.
type leaf string

func (l leaf) flat() string                 { return string(l) }
func (l leaf) lines(indent string) []string { return []string{indent + string(l)} }

// bin is `l op r`; operands that are themselves binary operations are
// parenthesised, so precedence never needs thinking about.
type bin struct {
	op   string
	l, r expr
}

func op(l expr, operator string, r expr) bin { return bin{op: operator, l: l, r: r} }

func paren(e expr) string {
	if _, ok := e.(bin); ok {
		return "(" + e.flat() + ")"
	}
	return e.flat()
}

// chains are the operators whose left-nested repetition needs no parentheses:
// a and b and c is (a and b) and c.
var chains = map[string]bool{"and": true, "or": true, "unless": true, "+": true, "*": true}

// left prints the left operand, without parentheses when it continues a chain.
func (b bin) left() string {
	if l, ok := b.l.(bin); ok && l.op == b.op && chains[b.op] {
		return l.flat()
	}
	return paren(b.l)
}

func (b bin) flat() string { return b.left() + " " + b.op + " " + paren(b.r) }

func (b bin) lines(indent string) []string {
	if f := b.flat(); len(indent)+len(f) <= maxWidth {
		return []string{indent + f}
	}
	if w := wrapped(b, indent); w != nil {
		return w
	}
	var out []string
	if l, ok := b.l.(bin); ok && l.op == b.op && chains[b.op] {
		out = append(out, l.lines(indent)...)
	} else {
		out = append(out, operandLines(b.l, indent)...)
	}
	right := operandLines(b.r, indent)
	// A right operand on one line follows its operator: "> -Inf", "* on() group_right() ln(...)".
	if len(right) == 1 && len(right[0])+len(b.op)+1 <= maxWidth {
		return append(out, indent+b.op+" "+strings.TrimPrefix(right[0], indent))
	}
	out = append(out, indent+b.op)
	return append(out, right...)
}

func operandLines(e expr, indent string) []string {
	if _, ok := e.(bin); !ok {
		return e.lines(indent)
	}
	if f := e.flat(); len(indent)+len(f)+2 <= maxWidth {
		return []string{indent + "(" + f + ")"}
	}
	out := []string{indent + "("}
	out = append(out, e.lines(indent+"  ")...)
	return append(out, indent+")")
}

// call is fn(args...).
type call struct {
	fn   string
	args []expr
}

func fn(name string, args ...expr) call { return call{fn: name, args: args} }

func (c call) flat() string {
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = a.flat()
	}
	return c.fn + "(" + strings.Join(parts, ", ") + ")"
}

func (c call) lines(indent string) []string {
	if f := c.flat(); len(indent)+len(f) <= maxWidth {
		return []string{indent + f}
	}
	if w := wrapped(c, indent); w != nil {
		return w
	}
	out := []string{indent + c.fn + "("}
	for i, a := range c.args {
		ls := a.lines(indent + "  ")
		if i < len(c.args)-1 {
			ls[len(ls)-1] += ","
		}
		out = append(out, ls...)
	}
	return append(out, indent+")")
}

// subquery is (e)[rng:step].
type subquery struct {
	e       expr
	rngStep string
}

func sub(e expr, rangeAndStep string) subquery { return subquery{e: e, rngStep: rangeAndStep} }

func (s subquery) flat() string { return "(" + s.e.flat() + ")" + s.rngStep }

func (s subquery) lines(indent string) []string {
	if f := s.flat(); len(indent)+len(f) <= maxWidth {
		return []string{indent + f}
	}
	if w := wrapped(s, indent); w != nil {
		return w
	}
	out := []string{indent + "("}
	out = append(out, s.e.lines(indent+"  ")...)
	return append(out, indent+")"+s.rngStep)
}

// render prints e, on one line if it fits, else over several.
func render(e expr) string { return strings.Join(e.lines(""), "\n") }
