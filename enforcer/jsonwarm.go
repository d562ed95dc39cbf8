package enforcer

import (
	"encoding/json"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// warmJSON builds encoding/json's encoders and field lists for what a run decodes and encodes
// on its critical path (the cached profile, the run report) while the CLI parses: building
// them (reflection, once per type and process) is most of what the JSON costs a run. The
// decoder shares the field lists with the encoder. (The init stage's messages are not JSON:
// initstage.Marshal.)
func warmJSON() {
	for _, v := range []any{&policy.Profile{}, &report.Envelope{Report: &report.Report{}}} {
		_, _ = json.Marshal(v)
	}
}
