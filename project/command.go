package project

import (
	"fmt"
	"strings"
)

// SplitCommand splits a command string the way a POSIX shell splits words, without expanding
// anything: whitespace separates words, '…' quotes literally, "…" quotes with \ escaping
// " \ $ and `, and \ outside quotes escapes the next character. Shell operators outside quotes
// are refused: no shell runs the command.
func SplitCommand(s string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		squote  bool
		dquote  bool
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			if dquote && !strings.ContainsRune("\"\\$`\n", r) {
				cur.WriteRune('\\')
			}
			if r != '\n' {
				cur.WriteRune(r)
			}
			escaped = false
		case squote:
			if r == '\'' {
				squote = false
			} else {
				cur.WriteRune(r)
			}
		case dquote:
			switch r {
			case '"':
				dquote = false
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'':
			squote, inWord = true, true
		case r == '"':
			dquote, inWord = true, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>()`", r) || r == '$' || (r == '*' || r == '?' || r == '~') && !inWord:
			return nil, fmt.Errorf("%q: %q needs a shell, and none runs the command: write [sh, -c, %q]", s, string(r), s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if squote || dquote {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if escaped {
		return nil, fmt.Errorf("%q: ends with a backslash", s)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}
