package bench

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotECDF draws one ECDF curve per run on a log latency axis, with offset
// added to every latency (the client's round trip, as in the reference
// figure) and printed in the legend. The format follows the file's
// extension (.png, .svg, .pdf).
func plotECDF(path string, r *Report, offset time.Duration) error {
	p := plot.New()
	off := float64(offset) / 1e6
	p.Title.Text = fmt.Sprintf("tbhost bench %s: latency ECDF", r.Command)
	p.X.Label.Text = "latency (ms, log scale)"
	if offset > 0 {
		p.X.Label.Text = fmt.Sprintf("latency + %s offset (ms, log scale)", offset)
	}
	p.Y.Label.Text = "fraction of requests at most x"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = fractionTicks{}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	drawn := 0
	for i, run := range r.Runs {
		pts := run.ECDF()
		if len(pts) == 0 {
			continue
		}
		xy := make(plotter.XYs, 0, 2*len(pts)+1)
		prev := 0.0
		for _, pt := range pts {
			x := pt.Ms + off
			xy = append(xy, plotter.XY{X: x, Y: prev}, plotter.XY{X: x, Y: pt.Fraction})
			prev = pt.Fraction
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", run.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		line.Width = vg.Points(1.5)
		p.Add(line)
		label := run.Name
		if offset > 0 {
			label += fmt.Sprintf(" (+%s)", offset)
		}
		p.Legend.Add(label, line)
		drawn++
	}
	if drawn > 0 {
		p.X.Min, p.X.Max = p.X.Min*0.9, p.X.Max*1.1
	}
	if drawn == 0 {
		return fmt.Errorf("plot %s: no measured requests to draw", path)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// logTicks labels 1, 2 and 5 times each power of ten (with unlabelled minor
// ticks between), so a curve between 30 and 150 ms still has readable
// numbers under it.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	var ticks []plot.Tick
	for dec := math.Pow10(int(math.Floor(math.Log10(lo)))); dec <= hi; dec *= 10 {
		for m := 1; m < 10; m++ {
			v := float64(m) * dec
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 || (hi/lo < 20 && m != 7 && m != 9) {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// fractionTicks marks every tenth of the y axis.
type fractionTicks struct{}

func (fractionTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		t := plot.Tick{Value: v}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
