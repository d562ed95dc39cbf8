package policy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// docker's config.json: the fields of an auths entry that hold a secret.
const (
	dockerAuth  = "auth"          // base64(user:password)
	dockerToken = "identitytoken" // an OAuth token
)

// dockerRegistryHost returns the host an auths key names: "registry.example:5000",
// "https://index.docker.io/v1/" → index.docker.io.
func dockerRegistryHost(reg string) string {
	if _, rest, ok := strings.Cut(reg, "://"); ok {
		reg = rest
	}
	h, _, _ := strings.Cut(reg, "/")
	return strings.ToLower(h)
}

// dockerKey splits a docker rule's key auths.REGISTRY.FIELD.
func dockerKey(k string) (reg, field string, ok bool) {
	rest, ok := strings.CutPrefix(k, "auths.")
	if !ok {
		return "", "", false
	}
	for _, f := range []string{dockerAuth, dockerToken} {
		if r, ok := strings.CutSuffix(rest, "."+f); ok && r != "" {
			return r, f, true
		}
	}
	return "", "", false
}

type dockerEntry = map[string]json.RawMessage

// dockerAuths decodes config.json and its auths, in the order of the keys.
func dockerAuths(name string, data []byte) (map[string]json.RawMessage, map[string]dockerEntry, []string, error) {
	lineOf := func(off int64) int { return bytes.Count(data[:min(int(off), len(data))], []byte("\n")) + 1 }
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, nil, nil, &StoreError{File: name, Line: lineOf(se.Offset), Msg: "not JSON: " + se.Error()}
		case errors.As(err, &te):
			return nil, nil, nil, &StoreError{File: name, Line: lineOf(te.Offset), Msg: "not a JSON object"}
		}
		return nil, nil, nil, &StoreError{File: name, Msg: err.Error()}
	}
	if top == nil { // "null"
		top = map[string]json.RawMessage{}
	}
	auths := map[string]dockerEntry{}
	if raw, ok := top["auths"]; ok {
		if err := json.Unmarshal(raw, &auths); err != nil {
			return nil, nil, nil, &StoreError{File: name, Line: lineOf(int64(bytes.Index(data, []byte(`"auths"`)))), Key: "auths", Msg: "not an object of registry: {auth, identitytoken} entries"}
		}
	}
	regs := make([]string, 0, len(auths))
	for r := range auths {
		regs = append(regs, r)
	}
	// In the file's order, for errors and learn's one-rule-per-host choice.
	slices.SortFunc(regs, func(a, b string) int {
		return bytes.Index(data, []byte(`"`+a+`"`)) - bytes.Index(data, []byte(`"`+b+`"`))
	})
	return top, auths, regs, nil
}

func parseDocker(name string, data []byte) ([]StoreEntry, error) {
	_, auths, regs, err := dockerAuths(name, data)
	if err != nil {
		return nil, err
	}
	var out []StoreEntry
	for _, r := range regs {
		line := bytes.Count(data[:max(bytes.Index(data, []byte(`"`+r+`"`)), 0)], []byte("\n")) + 1
		for _, f := range []string{dockerAuth, dockerToken} {
			raw, ok := auths[r][f]
			if !ok {
				continue
			}
			key := "auths." + r + "." + f
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, &StoreError{File: name, Line: line, Key: key, Msg: "not a string"}
			}
			if v == "" {
				continue
			}
			if f == dockerAuth {
				dec, err := base64.StdEncoding.DecodeString(v)
				_, pw, ok := strings.Cut(string(dec), ":")
				if err != nil || !ok {
					return nil, &StoreError{File: name, Line: line, Key: key, Msg: "not base64 of user:password"}
				}
				v = pw
			}
			out = append(out, StoreEntry{Key: key, Value: v, Line: line})
		}
	}
	return out, nil
}

// rewriteDocker keeps config.json's settings but its secrets: a brokered auths entry holds
// its stand-in (as the password of auth, or as identitytoken) and nothing else; every other
// registry's entry, and the credential helpers (credsStore, credHelpers: their secrets are
// not inside, and a helper would shadow the stand-in), are dropped.
func rewriteDocker(data []byte, standIns map[string]string) []byte {
	top, auths, regs, err := dockerAuths("", data)
	if err != nil {
		return nil
	}
	delete(top, "credsStore")
	delete(top, "credHelpers")
	out := map[string]dockerEntry{}
	for _, r := range regs {
		e := dockerEntry{}
		if s, ok := standIns["auths."+r+"."+dockerAuth]; ok {
			var v string
			json.Unmarshal(auths[r][dockerAuth], &v)
			dec, _ := base64.StdEncoding.DecodeString(v)
			user, _, _ := strings.Cut(string(dec), ":")
			e[dockerAuth], _ = json.Marshal(base64.StdEncoding.EncodeToString([]byte(user + ":" + s)))
		}
		if s, ok := standIns["auths."+r+"."+dockerToken]; ok {
			e[dockerToken], _ = json.Marshal(s)
		}
		if len(e) > 0 {
			out[r] = e
		}
	}
	if len(auths) > 0 || len(out) > 0 {
		top["auths"], _ = json.Marshal(out)
	}
	b, _ := json.MarshalIndent(top, "", "\t")
	return append(b, '\n')
}
