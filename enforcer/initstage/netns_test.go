package initstage

import (
	"errors"
	"testing"
)

// A stage that entered its own network namespace early (ArgNetNS) runs only plans with one, and
// one whose early unshare failed refuses the plan that asks for it instead of running in the
// host's.
func TestEarlyNetNSFitsOnlyPlansWithOne(t *testing.T) {
	for _, tc := range []struct {
		name    string
		net     earlyNet
		unshare bool
		want    string // the failing layer or stage; "" none
	}{
		{"early namespace, plan without one", earlyNet{asked: true}, false, "config"},
		{"early unshare failed, plan with one", earlyNet{asked: true, err: errors.New("EPERM")}, true, LayerNetNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := enterNamespaces(&Config{UnshareNet: tc.unshare}, false, tc.net)
			got := ""
			if st != nil {
				got = st.Stage
				if st.Layer != "" {
					got = st.Layer
				}
			}
			if got != tc.want {
				t.Errorf("got %q (%+v), want %q", got, st, tc.want)
			}
		})
	}
}
