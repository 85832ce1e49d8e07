//go:build stormsim_test_underreport

package replica

import "os"

// In a build for the reconciliation's power test only: report one event of
// the call with this progress token less than was produced.
func init() { underReport = os.Getenv("STORMSIM_UNDERREPORT_TOKEN") }
