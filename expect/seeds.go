package expect

import (
	"math"

	"github.com/stormsim/stormsim/report"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// overSeeds puts a run's metrics over several seeds into db: the means
// (report.Stats, as the over-seeds table shows them) in Metrics, and each
// seed's value in Values.
func overSeeds(db *DesignBase, o *report.OverSeeds) {
	for _, sd := range o.Designs {
		if sd.Name != db.Name {
			continue
		}
		db.Values = map[string][]*float64{}
		for m, st := range sd.Metrics {
			if _, ok := db.Metrics[m]; !ok {
				continue
			}
			if db.Metrics[m] == nil {
				continue // unknown in this run: stays null
			}
			db.Metrics[m] = st.Mean
			db.Values[m] = st.Values
		}
	}
}

// welchHalf is the half-width of the 95% interval of the difference of two
// means, Welch's t with the Welch–Satterthwaite degrees of freedom, from
// each run's values over its seeds; 0 unless both have two values or more.
// It is the same Student t the over-seeds table's intervals use
// (report.Stats), for two samples.
func welchHalf(a, b []*float64) float64 {
	xa, xb := present(a), present(b)
	if len(xa) < 2 || len(xb) < 2 {
		return 0
	}
	na, nb := float64(len(xa)), float64(len(xb))
	va, vb := stat.Variance(xa, nil)/na, stat.Variance(xb, nil)/nb
	se := math.Sqrt(va + vb)
	if se == 0 {
		return 0
	}
	df := (va + vb) * (va + vb) / (va*va/(na-1) + vb*vb/(nb-1))
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975) * se
}

func present(vs []*float64) []float64 {
	var xs []float64
	for _, v := range vs {
		if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			xs = append(xs, *v)
		}
	}
	return xs
}
