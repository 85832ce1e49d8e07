package expect

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
)

// JUnit is a junit.xml document: one suite per scenario, one test case per
// scenario × design × check, plus one per design for the baseline.
type JUnit struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr,omitempty"`
	Suites   []JUnitSuite `xml:"testsuite"`
	// AcceptBetter lets a baseline case pass whose only changes are for
	// the better (compare --accept-better).
	AcceptBetter bool `xml:"-"`
}

// JUnitSuite is one scenario.
type JUnitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr,omitempty"`
	Cases    []JUnitCase `xml:"testcase"`
}

// JUnitCase is one check.
type JUnitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
}

// JUnitSkipped marks a check that was not made, with the reason.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnitFailure carries the numbers of a failed check.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// AddScenario adds a scenario's threshold results and baseline comparison
// (nil when there was none to compare with; note says why).
func (j *JUnit) AddScenario(name string, designs []string, results []Result, cmp *Comparison, baselineErr error) {
	s := JUnitSuite{Name: name}
	for _, r := range results {
		c := JUnitCase{ClassName: name + "." + r.Design, Name: r.Metric + "_" + r.Op}
		if !r.Pass {
			c.Failure = &JUnitFailure{Message: r.String(), Type: "threshold", Text: r.String()}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, d := range designs {
		c := JUnitCase{ClassName: name + "." + d, Name: "baseline"}
		switch {
		case baselineErr != nil:
			c.Failure = &JUnitFailure{Message: baselineErr.Error(), Type: "baseline", Text: baselineErr.Error()}
		case cmp != nil && cmp.Skipped != "":
			c.Skipped = &JUnitSkipped{Message: cmp.Skipped}
		case cmp != nil && slices.Contains(cmp.Missing, d):
			msg := "no baseline for design " + d + ": record one with make baseline"
			c.Failure = &JUnitFailure{Message: msg, Type: "baseline", Text: msg}
		case cmp != nil:
			var lines []string
			worse := 0
			for _, r := range cmp.Failing(j.AcceptBetter) {
				if r.Design == d {
					lines = append(lines, r.String())
					if r.Kind == KindWorse {
						worse++
					}
				}
			}
			switch {
			case worse > 0:
				msg := fmt.Sprintf("%d metric(s) regressed against the baseline", worse)
				if worse < len(lines) {
					msg += fmt.Sprintf(", %d changed", len(lines)-worse)
				}
				c.Failure = &JUnitFailure{Message: msg, Type: "regression", Text: strings.Join(lines, "\n")}
			case len(lines) > 0:
				msg := fmt.Sprintf("%d metric(s) changed beyond tolerance: refresh the baseline", len(lines))
				c.Failure = &JUnitFailure{Message: msg, Type: "changed", Text: strings.Join(lines, "\n")}
			}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, c := range s.Cases {
		s.Tests++
		if c.Failure != nil {
			s.Failures++
		}
		if c.Skipped != nil {
			s.Skipped++
		}
	}
	j.Suites = append(j.Suites, s)
	j.Tests += s.Tests
	j.Failures += s.Failures
	j.Skipped += s.Skipped
}

// Marshal encodes the document with its XML header.
func (j *JUnit) Marshal() ([]byte, error) {
	b, err := xml.MarshalIndent(j, "", " ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// AddNoVerdict adds a scenario that gave no verdict (a live run on a
// saturated host): one skipped case per design, with the reason.
func (j *JUnit) AddNoVerdict(name string, designs []string, reason string) {
	s := JUnitSuite{Name: name}
	for _, d := range designs {
		s.Cases = append(s.Cases, JUnitCase{ClassName: name + "." + d, Name: "no_verdict", Skipped: &JUnitSkipped{Message: "no verdict: " + reason}})
	}
	s.Tests, s.Skipped = len(s.Cases), len(s.Cases)
	j.Suites = append(j.Suites, s)
	j.Tests += s.Tests
	j.Skipped += s.Skipped
}
