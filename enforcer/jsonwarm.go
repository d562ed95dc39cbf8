package enforcer

import (
	"encoding/json"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// warmJSON builds encoding/json's encoders and field lists for what a run decodes and encodes
// on its critical path (the init stage's ids, the cached profile, the init stage's config, the
// run report) while the CLI parses: building them (reflection, once per type and process) is
// most of what the JSON costs a run, ~1.5 ms of CPU. The decoder shares the field lists with
// the encoder.
func warmJSON() {
	for _, v := range []any{&initstage.Switch{}, &policy.Profile{}, &initConfig{}, &report.Envelope{Report: &report.Report{}}} {
		_, _ = json.Marshal(v)
	}
}
