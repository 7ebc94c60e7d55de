package intake

import (
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// flatJSON reads the common shape of a JSON post, one flat object of strings, numbers,
// booleans and nulls with at most max members, in one pass without the allocations of
// encoding/json's token stream. It gives the fields exactly as readJSON's decoder path
// would (numbers keep their text, booleans become "true"/"false", null ""), and ok false
// for everything else: a syntax error, nesting, a \u escape, too many fields. readJSON
// then runs the decoder path, which is the authority on those (and on their error
// messages). raw must be valid UTF-8 (readJSON checks that first). A differential fuzz
// target holds the two paths to the same answers.
func flatJSON(raw []byte, max int) (out outbox.Fields, ok bool) {
	p := flatParser{b: raw}
	p.space()
	if !p.eat('{') {
		return nil, false
	}
	p.space()
	if p.eat('}') {
		return p.end(outbox.Fields(nil))
	}
	out = make(outbox.Fields, 0, min(8, max))
	for {
		name, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if !p.eat(':') {
			return nil, false
		}
		if len(out) >= max {
			return nil, false
		}
		p.space()
		value, ok := p.value()
		if !ok {
			return nil, false
		}
		out = append(out, outbox.Field{Name: name, Value: value})
		p.space()
		if p.eat(',') {
			p.space()
			continue
		}
		if p.eat('}') {
			return p.end(out)
		}
		return nil, false
	}
}

type flatParser struct {
	b []byte
	i int
}

// end accepts fields when nothing but whitespace follows the object.
func (p *flatParser) end(fields outbox.Fields) (outbox.Fields, bool) {
	p.space()
	if p.i != len(p.b) {
		return nil, false
	}
	return fields, true
}

func (p *flatParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *flatParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *flatParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *flatParser) value() (string, bool) {
	if p.i >= len(p.b) {
		return "", false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.lit("true"):
		return "true", true
	case p.lit("false"):
		return "false", true
	case p.lit("null"):
		return "", true
	}
	return "", false
}

// str reads a string without \u escapes; the common escapes are decoded.
func (p *flatParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
	return "", false
}

// escaped finishes a string from start whose first escape is at p.i.
func (p *flatParser) escaped(start int) (string, bool) {
	buf := make([]byte, p.i-start, p.i-start+16)
	copy(buf, p.b[start:p.i])
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", false
		}
		switch e := p.b[p.i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		default: // \u and invalid escapes: the decoder path
			return "", false
		}
		p.i += 2
	}
	return "", false
}

// number reads a JSON number and keeps its text, as json.Number does.
func (p *flatParser) number() (string, bool) {
	start := p.i
	p.eat('-')
	switch {
	case p.eat('0'):
	case p.digits() == 0:
		return "", false
	}
	if p.eat('.') && p.digits() == 0 {
		return "", false
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if p.digits() == 0 {
			return "", false
		}
	}
	return string(p.b[start:p.i]), true
}

func (p *flatParser) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
