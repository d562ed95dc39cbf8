// Package ptyrelay puts a pseudo-terminal of sysprof's between an enforced command and the
// user's terminal: the command gets a controlling terminal (its /dev/tty prompts, job control,
// window size work as unsandboxed), and what it prints reaches the user's terminal only
// through Filter, which passes text and the display's ordinary sequences and drops the rest
// (clipboard writes, report queries whose answers come back as input, titles, unknown strings).
package ptyrelay

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Dropped counts what Filter dropped, by what it was (Kind).
type Dropped map[Kind]int

// Kind is one class of dropped sequence; its String is the report's words.
type Kind string

// The classes of dropped sequences.
const (
	KindClipboard Kind = "set or read the clipboard (OSC 52)"
	KindTitle     Kind = "set the window title (OSC 0/1/2)"
	KindQuery     Kind = "query the terminal (a report whose answer comes back as input)"
	KindLink      Kind = "print a hyperlink of a scheme other than http, https or file (OSC 8)"
	KindOSC       Kind = "send an operating system command (OSC) not on the allow list"
	KindString    Kind = "send a DCS, APC, PM or SOS string (file transfer, graphics, DECRQSS)"
	KindWindow    Kind = "move, resize or report the window (CSI t)"
	KindOther     Kind = "send an escape sequence not on the allow list"
	KindC1        Kind = "send an 8-bit control character"
	KindTooLong   Kind = "send an over-long escape sequence"
)

// Notes are the run report's lines for d, one per kind, sorted.
func (d Dropped) Notes() []string {
	var out []string
	for k, n := range d {
		out = append(out, fmt.Sprintf("the command tried to %s: dropped (%d)", k, n))
	}
	sort.Strings(out)
	return out
}

// Total is the number of dropped sequences.
func (d Dropped) Total() int {
	n := 0
	for _, c := range d {
		n += c
	}
	return n
}

type state uint8

const (
	ground     state = iota
	escape           // after ESC
	escInter         // ESC and intermediates (0x20-0x2f), waiting for the final byte
	csi              // ESC [ ...
	osc              // ESC ] ..., kept (OSC 8) until its terminator
	oscSkip          // an OSC being dropped
	oscEsc           // ESC inside a kept OSC
	oscSkipEsc       // ESC inside a dropped OSC
	str              // DCS, SOS, PM, APC: dropped until ST
	strEsc           // ESC inside one
	c2               // after 0xC2 in ground: 0x80-0x9F next is a C1 control in UTF-8
)

// maxSeq bounds a kept sequence (a CSI's parameters, an OSC 8 link): longer is dropped.
const maxSeq = 4096

// Filter is a streaming parser of the command's output. It keeps its state between Writes, so
// a sequence split across reads is judged whole; it never emits part of a sequence it has not
// judged. Not safe for concurrent use.
type Filter struct {
	st      state
	seq     []byte // the sequence being judged (from its ESC)
	cont    int    // UTF-8 continuation bytes expected in ground
	dropped Dropped
	skipAs  Kind // what the OSC or string being skipped counts as
}

// NewFilter returns a filter in the ground state.
func NewFilter() *Filter { return &Filter{dropped: Dropped{}} }

// Dropped is what the filter dropped so far.
func (f *Filter) Dropped() Dropped { return f.dropped }

func (f *Filter) drop(k Kind) { f.dropped[k]++ }

// Filter appends to out what of p may reach the terminal and returns it.
func (f *Filter) Filter(out, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		if f.st == ground && f.cont == 0 {
			// Printable ASCII, most of any output, in one append.
			j := i
			for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
				j++
			}
			out = append(out, p[i:j]...)
			if i = j; i == len(p) {
				break
			}
		}
		out = f.step(out, p[i])
	}
	return out
}

// Flush appends to out what the filter holds that may pass on its own (a UTF-8 lead byte it
// waited to judge with the next) at the end of the stream; a sequence not ended is dropped.
func (f *Filter) Flush(out []byte) []byte {
	if f.st == c2 {
		out = append(out, 0xc2)
	}
	f.st, f.cont, f.seq = ground, 0, f.seq[:0]
	return out
}

func (f *Filter) step(out []byte, b byte) []byte {
	switch f.st {
	case ground:
		return f.ground(out, b)
	case c2:
		f.st = ground
		if b >= 0x80 && b <= 0x9f {
			f.cont = 0
			f.drop(KindC1)
			return out
		}
		out = append(out, 0xc2)
		return f.ground(out, b)
	case escape:
		return f.escape(out, b)
	case escInter:
		if f.abort(b) {
			return f.restart(out, b)
		}
		if b < 0x20 {
			return f.c0(out, b) // a C0 control inside a sequence is executed at once
		}
		f.seq = append(f.seq, b)
		if b >= 0x20 && b <= 0x2f {
			if len(f.seq) > 8 {
				f.drop(KindTooLong)
				f.st = ground
			}
			return out
		}
		f.st = ground
		if escAllowed(f.seq) {
			return append(out, f.seq...)
		}
		f.drop(KindOther)
		return out
	case csi:
		if f.abort(b) {
			return f.restart(out, b)
		}
		if b < 0x20 {
			return f.c0(out, b)
		}
		f.seq = append(f.seq, b)
		if b >= 0x40 && b <= 0x7e {
			f.st = ground
			if k, ok := judgeCSI(f.seq); !ok {
				f.drop(k)
				return out
			}
			return append(out, f.seq...)
		}
		if b > 0x7e || len(f.seq) > 256 { // DEL or 8-bit inside: not a sequence a terminal keeps
			f.drop(KindTooLong)
			f.st = ground
		}
		return out
	case osc:
		switch {
		case b == 0x07:
			f.st = ground
			return f.endOSC(out, []byte{0x07})
		case b == 0x1b:
			f.st = oscEsc
			return out
		case b == 0x18 || b == 0x1a:
			f.drop(KindOSC)
			f.st = ground
			return out
		}
		first := b == ';' && !bytes.ContainsRune(f.seq[2:], ';')
		f.seq = append(f.seq, b)
		switch {
		case len(f.seq) > maxSeq:
			f.drop(KindTooLong)
			f.st, f.skipAs = oscSkip, ""
		case first && !f.keepOSC():
			f.st = oscSkip
		}
		return out
	case oscEsc:
		if b == '\\' {
			f.st = ground
			return f.endOSC(out, []byte{0x1b, '\\'})
		}
		f.drop(KindOSC) // an unterminated OSC: the terminal drops it and reads the ESC anew
		f.st = escape
		f.seq = append(f.seq[:0], 0x1b)
		return f.escape(out, b)
	case oscSkip:
		switch b {
		case 0x07, 0x18, 0x1a:
			f.endSkip()
		case 0x1b:
			f.st = oscSkipEsc
		}
		return out
	case oscSkipEsc:
		f.endSkip()
		if b == '\\' {
			return out
		}
		f.st = escape
		f.seq = append(f.seq[:0], 0x1b)
		return f.escape(out, b)
	case str:
		switch b {
		case 0x18, 0x1a:
			f.endSkip()
		case 0x1b:
			f.st = strEsc
		}
		return out
	case strEsc:
		f.endSkip()
		if b == '\\' {
			return out
		}
		f.st = escape
		f.seq = append(f.seq[:0], 0x1b)
		return f.escape(out, b)
	}
	return out
}

// abort: ESC restarts a sequence, CAN and SUB cancel it (the terminal does the same).
func (f *Filter) abort(b byte) bool { return b == 0x1b || b == 0x18 || b == 0x1a }

// restart handles b, which cut the sequence being judged short (dropped: never emitted).
func (f *Filter) restart(out []byte, b byte) []byte {
	f.drop(KindOther)
	f.st = ground
	if b == 0x1b {
		f.st = escape
		f.seq = append(f.seq[:0], b)
		return out
	}
	return append(out, b) // CAN/SUB: harmless on their own
}

func (f *Filter) endSkip() {
	if f.skipAs != "" {
		f.drop(f.skipAs)
	}
	f.skipAs = ""
	f.st = ground
}

func (f *Filter) ground(out []byte, b byte) []byte {
	switch {
	case b == 0x1b:
		f.cont = 0
		f.st = escape
		f.seq = append(f.seq[:0], b)
		return out
	case b < 0x20:
		f.cont = 0
		return f.c0(out, b)
	case b < 0x80:
		f.cont = 0
		return append(out, b)
	case b <= 0xbf: // a continuation byte
		if f.cont > 0 {
			f.cont--
			return append(out, b)
		}
		if b <= 0x9f { // a lone 0x80-0x9f is an 8-bit C1 control to a terminal that takes them
			f.drop(KindC1)
			return out
		}
		return append(out, b)
	case b == 0xc2:
		f.cont = 1
		f.st = c2
		return out
	case b >= 0xc0 && b <= 0xdf:
		f.cont = 1
	case b >= 0xe0 && b <= 0xef:
		f.cont = 2
	case b >= 0xf0 && b <= 0xf7:
		f.cont = 3
	default:
		f.cont = 0
	}
	return append(out, b)
}

// c0 passes a C0 control but ENQ, whose answerback comes back as input.
func (f *Filter) c0(out []byte, b byte) []byte {
	if b == 0x05 {
		f.drop(KindQuery)
		return out
	}
	return append(out, b)
}

func (f *Filter) escape(out []byte, b byte) []byte {
	switch {
	case b == '[':
		f.seq = append(f.seq, b)
		f.st = csi
	case b == ']':
		f.seq = append(f.seq, b)
		f.st = osc
	case b == 'P' || b == 'X' || b == '^' || b == '_':
		f.st = str
		f.skipAs = KindString
	case b == 0x18 || b == 0x1a:
		f.drop(KindOther)
		f.st = ground
		return append(out, b)
	case b == 0x1b:
		f.drop(KindOther)
		f.seq = append(f.seq[:0], b)
	case b < 0x20:
		return f.c0(out, b)
	case b >= 0x20 && b <= 0x2f:
		f.seq = append(f.seq, b)
		f.st = escInter
	default:
		f.st = ground
		f.seq = append(f.seq, b)
		if escAllowed(f.seq) {
			return append(out, f.seq...)
		}
		if b == 'Z' {
			f.drop(KindQuery) // DECID
		} else {
			f.drop(KindOther)
		}
	}
	return out
}

// keepOSC decides an OSC at its first ';': only a hyperlink (OSC 8) is kept to be judged
// whole; anything else is skipped, counted as what it is.
func (f *Filter) keepOSC() bool {
	ps := string(f.seq[2 : len(f.seq)-1])
	switch ps {
	case "8":
		return true
	case "52":
		f.skipAs = KindClipboard
	case "0", "1", "2":
		f.skipAs = KindTitle
	default:
		f.skipAs = KindOSC
	}
	return false
}

// endOSC judges a kept OSC at its terminator term.
func (f *Filter) endOSC(out, term []byte) []byte {
	s := string(f.seq[2:])
	if !strings.HasPrefix(s, "8;") {
		// Ended before its first ';': what it was is in its number.
		switch s {
		case "52":
			f.drop(KindClipboard)
		case "0", "1", "2":
			f.drop(KindTitle)
		default:
			f.drop(KindOSC)
		}
		return out
	}
	if !linkAllowed(s[2:]) {
		f.drop(KindLink)
		return out
	}
	out = append(out, f.seq...)
	return append(out, term...)
}

// linkAllowed: OSC 8's "params;URI", the URI empty (the link's end) or http, https or file,
// params and URI printable ASCII only.
func linkAllowed(s string) bool {
	params, uri, ok := strings.Cut(s, ";")
	if !ok {
		return false
	}
	for i := 0; i < len(uri); i++ {
		if uri[i] < 0x21 || uri[i] > 0x7e {
			return false
		}
	}
	for i := 0; i < len(params); i++ { // id=...: a control inside could end the string early
		if params[i] < 0x20 || params[i] > 0x7e {
			return false
		}
	}
	if uri == "" {
		return true
	}
	l := strings.ToLower(uri)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "file://")
}

// escAllowed: the ESC sequences (not CSI, OSC or strings) that change only the display:
// save/restore cursor, keypad modes, index, reverse index, next line, tab set, full reset,
// the character sets (ESC ( B, ESC ) 0...) and the line attributes and alignment test (ESC #).
func escAllowed(seq []byte) bool {
	s := string(seq[1:])
	switch s {
	case "7", "8", "=", ">", "D", "E", "H", "M", "c", "N", "O", "\\":
		return true
	}
	if len(s) == 2 {
		switch s[0] {
		case '(', ')', '*', '+':
			return s[1] >= '0' && s[1] <= 'B' || s[1] == '<' || s[1] == '>'
		case '#':
			return s[1] >= '3' && s[1] <= '8'
		}
	}
	return false
}

// The private modes (CSI ? N h/l) that may be set: cursor keys, reverse video, origin,
// autowrap, cursor blink and visibility, keypad, the alternate screen, mouse reports, focus
// events, the meta key, bracketed paste, synchronized output.
var privateModes = map[string]bool{
	"1": true, "3": true, "4": true, "5": true, "6": true, "7": true, "8": true, "12": true, "25": true,
	"66": true, "47": true, "1047": true, "1048": true, "1049": true,
	"9": true, "1000": true, "1001": true, "1002": true, "1003": true, "1004": true, "1005": true,
	"1006": true, "1015": true, "1016": true,
	"1034": true, "1035": true, "1036": true, "1039": true,
	"2004": true, "2026": true,
}

// judgeCSI: whether a whole CSI sequence (ESC [ ... final) may pass, else what it counts as.
func judgeCSI(seq []byte) (Kind, bool) {
	body := seq[2 : len(seq)-1]
	final := seq[len(seq)-1]
	var priv byte
	if len(body) > 0 && body[0] >= '<' && body[0] <= '?' {
		priv = body[0]
		body = body[1:]
	}
	i := len(body)
	for i > 0 && body[i-1] >= 0x20 && body[i-1] <= 0x2f {
		i--
	}
	params, inter := string(body[:i]), string(body[i:])
	for j := 0; j < len(params); j++ {
		if params[j] < 0x30 || params[j] > 0x3f || (params[j] >= '<' && params[j] <= '?') {
			return KindOther, false
		}
	}
	switch {
	case priv == 0 && inter == "":
		switch final {
		case 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'P', 'S', 'T', 'X', 'Z',
			'@', '`', 'a', 'b', 'd', 'e', 'f', 'g', 'j', 'k', 'm', 'r', 's', 'u':
			return "", true
		case 'h', 'l': // ANSI modes: insert and newline only (2 locks the keyboard)
			return KindOther, params == "4" || params == "20"
		case 'n': // DSR: status and cursor position (numbers the terminal gives, not the command)
			return KindQuery, params == "5" || params == "6"
		case 'c': // DA1
			return KindQuery, params == "" || params == "0"
		case 't': // title stack push and pop only; the rest moves, resizes or reports the window
			p, _, _ := strings.Cut(params, ";")
			return KindWindow, p == "22" || p == "23"
		}
		return KindOther, false
	case priv == '?' && inter == "" && (final == 'h' || final == 'l'):
		for _, m := range strings.Split(params, ";") {
			if !privateModes[m] {
				return KindOther, false
			}
		}
		return "", true
	case priv == '?' && inter == "" && (final == 'J' || final == 'K'): // selective erase
		return "", true
	case priv == '>' && inter == "" && final == 'c': // DA2: the terminal's type and version
		return KindQuery, params == "" || params == "0"
	case priv == '>' && inter == "" && final == 'm': // modifyOtherKeys (vim)
		return "", true
	case priv == 0 && inter == " " && final == 'q': // cursor shape
		return "", true
	case priv == 0 && inter == "!" && final == 'p': // soft reset
		return "", true
	}
	if final == 'n' || final == 'c' || inter == "$" && final == 'p' || final == 'u' && (priv == '?' || priv == 0) {
		return KindQuery, false
	}
	return KindOther, false
}
