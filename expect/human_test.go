package expect

import "testing"

// Text output rounds for people; the residue of a float subtraction
// ("+11078.024999999994") is not shown.
func TestChangeStringRounds(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		base, cur float64
		want      string
	}{
		{1000.5, 12078.524999999994, "d/m: 1000.5 -> 12078.5 (+11078, +1107.2%), tolerance 5%"}, // six significant digits
		{1697586, 1707703, "d/m: 1697586 -> 1707703 (+10117, +0.6%), tolerance 5%"},
		{0.25, 0.125, "d/m: 0.25 -> 0.125 (-0.125, -50.0%), tolerance 5%"},
	} {
		c := Change{Design: "d", Metric: "m", Base: f(tc.base), Cur: f(tc.cur), Tolerance: 0.05}
		if got := c.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
