package enforcer

import (
	"encoding/json"

	"github.com/sysprof/sysprof/report"
)

// warmJSON builds encoding/json's encoders and field lists for the run report, which a run
// encodes at its end, while the CLI parses: building them (reflection, once per type and
// process) is most of what the JSON costs a run. (The init stage's messages and the profile
// cache are not JSON: internal/wire.)
func warmJSON() {
	for _, v := range []any{&report.Envelope{Report: &report.Report{}}} {
		_, _ = json.Marshal(v)
	}
}
