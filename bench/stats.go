package bench

import (
	"math"
	"math/rand/v2"
	"slices"
)

// bootstrapResamples is the number of bootstrap resamples behind each
// confidence interval; the generator is seeded, so a report is repeatable.
const bootstrapResamples = 2000

// Spread summarises one cell's step times.
type Spread struct {
	Min, Median, Max float64
	// CI is the 95% bootstrap confidence interval of the median
	// (percentile method). With a handful of samples it is rough: read it
	// as "the median could as well be anywhere in here".
	CI [2]float64
}

// spreadOf summarises v (which it does not modify).
func spreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rng := rand.New(rand.NewPCG(1, uint64(len(s))))
	meds := make([]float64, bootstrapResamples)
	buf := make([]float64, len(s))
	for i := range meds {
		for j := range buf {
			buf[j] = s[rng.IntN(len(s))]
		}
		meds[i] = quantile(buf, 0.5)
	}
	slices.Sort(meds)
	return Spread{
		Min: s[0], Median: quantile(s, 0.5), Max: s[len(s)-1],
		CI: [2]float64{quantileSorted(meds, 0.025), quantileSorted(meds, 0.975)},
	}
}

// speedupCI is the 95% bootstrap confidence interval of
// median(direct)/median(other), resampling both independently.
func speedupCI(direct, other []float64) [2]float64 {
	if len(direct) == 0 || len(other) == 0 {
		return [2]float64{}
	}
	rng := rand.New(rand.NewPCG(2, uint64(len(direct)*1000+len(other))))
	ratios := make([]float64, 0, bootstrapResamples)
	bd := make([]float64, len(direct))
	bo := make([]float64, len(other))
	for range bootstrapResamples {
		for j := range bd {
			bd[j] = direct[rng.IntN(len(direct))]
		}
		for j := range bo {
			bo[j] = other[rng.IntN(len(other))]
		}
		if m := quantile(bo, 0.5); m > 0 {
			ratios = append(ratios, quantile(bd, 0.5)/m)
		}
	}
	if len(ratios) == 0 {
		return [2]float64{}
	}
	slices.Sort(ratios)
	return [2]float64{quantileSorted(ratios, 0.025), quantileSorted(ratios, 0.975)}
}

// overlap reports whether two closed intervals share a point.
func overlap(a, b [2]float64) bool { return a[0] <= b[1] && b[0] <= a[1] }

// quantileSorted is the q-quantile by nearest rank of sorted v.
func quantileSorted(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// quantile is the q-quantile by nearest rank of v (which it sorts).
func quantile(v []float64, q float64) float64 {
	slices.Sort(v)
	return quantileSorted(v, q)
}

// slopes fits median step time, and time to the first stop, against RTT
// for each (workload, mode).
func slopes(cells []Cell) []Slope {
	type key struct{ w, m string }
	steps := map[key][][2]float64{}
	first := map[key][][2]float64{}
	wait := map[key][][2]float64{}
	var order []key
	for _, c := range cells {
		k := key{c.Workload, c.Mode}
		if _, ok := steps[k]; !ok {
			order = append(order, k)
		}
		steps[k] = append(steps[k], [2]float64{c.RTTMS, c.MedianMS})
		first[k] = append(first[k], [2]float64{c.RTTMS, c.FirstStopMS})
		wait[k] = append(wait[k], [2]float64{c.RTTMS, c.FirstStopWaitMS})
	}
	var out []Slope
	for _, k := range order {
		b, a, ok := fitLine(steps[k])
		if !ok {
			continue
		}
		s := Slope{Workload: k.w, Mode: k.m, RoundTrips: b, InterceptMS: a}
		s.FirstStopRoundTrips, s.FirstStopInterceptMS, _ = fitLine(first[k])
		s.FirstStopWaitRoundTrips, _, _ = fitLine(wait[k])
		out = append(out, s)
	}
	return out
}

// fitLine is the least-squares line y = a + b·x through p; ok is false
// with fewer than two distinct x.
func fitLine(p [][2]float64) (b, a float64, ok bool) {
	if len(p) < 2 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for _, xy := range p {
		sx += xy[0]
		sy += xy[1]
		sxx += xy[0] * xy[0]
		sxy += xy[0] * xy[1]
	}
	n := float64(len(p))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, 0, false
	}
	b = (n*sxy - sx*sy) / den
	return b, (sy - b*sx) / n, true
}

// pool merges one mode's cells of the rounds of a (workload, RTT) into
// one: their steps pooled, the first stop's figures, the bursts and the
// link's bytes the median over rounds (one sample each), the
// accelerator's counters and the link's drops summed, the digests equal
// only if every round's were. The cells are the caller's; pool returns
// the only one unchanged.
func pool(cells []*Cell) *Cell {
	if len(cells) == 1 {
		return cells[0]
	}
	c := *cells[0]
	c.Rounds, c.Stats, c.LinkDrops = len(cells), nil, 0
	var steps []float64
	var pushed float64
	med := func(f func(*Cell) float64) float64 {
		v := make([]float64, len(cells))
		for i, r := range cells {
			v[i] = f(r)
		}
		return quantile(v, 0.5)
	}
	for _, r := range cells {
		steps = append(steps, r.StepMS...)
		pushed += r.PushedBytesPerStop * float64(r.Stops)
		c.DigestsMatch = c.DigestsMatch && r.DigestsMatch
		c.LinkDrops += r.LinkDrops
		if r.Stats != nil {
			if c.Stats == nil {
				c.Stats = &Accel{}
			}
			c.Stats.add(r.Stats)
		}
	}
	c.setSteps(steps)
	if c.Stops > 0 {
		c.PushedBytesPerStop = pushed / float64(c.Stops)
	}
	c.BurstMS = med(func(r *Cell) float64 { return r.BurstMS })
	c.FirstStopMS = med(func(r *Cell) float64 { return r.FirstStopMS })
	c.VMRunMS = med(func(r *Cell) float64 { return r.VMRunMS })
	c.FirstStopWaitMS = med(func(r *Cell) float64 { return r.FirstStopWaitMS })
	c.FirstStopUpBytes = int64(med(func(r *Cell) float64 { return float64(r.FirstStopUpBytes) }))
	c.FirstStopDownBytes = int64(med(func(r *Cell) float64 { return float64(r.FirstStopDownBytes) }))
	c.LinkBytesUp = int64(med(func(r *Cell) float64 { return float64(r.LinkBytesUp) }))
	c.LinkBytesDown = int64(med(func(r *Cell) float64 { return float64(r.LinkBytesDown) }))
	return &c
}
