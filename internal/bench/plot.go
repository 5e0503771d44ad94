package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette has 8 colours that stay apart in print: a matrix's 8 settings
// share colours across "without store" (solid) and "with store" (dashed).
func palette() [8]color.RGBA {
	return [8]color.RGBA{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, {R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	}
}

// plotECDF draws, one curve per run, the latency ECDF (top) and its tail
// view (bottom: 1-F, the share of requests slower than x, on a log axis,
// where p99 and p99.9 are read off as 0.01 and 0.001), both on the same log
// latency axis, with offset added to every latency (the client's round
// trip, as in the reference figure) and printed in the legend, which sits
// in its own column to the right. The latency axis spans the curves
// themselves (padded in proportion to their spread, not to the offset), so
// an offset of 30 ms does not squeeze a 0.2 ms comparison between two
// ticks. The format follows the file's extension (.png, .svg).
func plotECDF(path string, r *Report, offset time.Duration) error {
	off := float64(offset) / 1e6
	xLabel := "latency per request (ms, log scale)"
	if offset > 0 {
		xLabel = fmt.Sprintf("latency per request + %s offset (ms, log scale)", offset)
	}
	top, tail := plot.New(), plot.New()
	top.Title.Text = fmt.Sprintf("tbhost bench %s: latency ECDF", r.Command)
	top.Y.Label.Text = "fraction of requests at most x"
	top.Y.Min, top.Y.Max = 0, 1
	top.Y.Tick.Marker = fractionTicks{}
	tail.Title.Text = "tail: share of requests slower than x (read p99 at 0.01, p99.9 at 0.001)"
	tail.Y.Label.Text = "1 - F (log scale)"
	tail.Y.Scale = plot.LogScale{}
	tail.Y.Tick.Marker = tailTicks{}
	for _, p := range []*plot.Plot{top, tail} {
		p.X.Label.Text = xLabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		p.Add(plotter.NewGrid())
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(10)
	if offset > 0 {
		leg.Add(fmt.Sprintf("every curve: latency + %s", offset))
	}
	drawn := 0
	xlo, xhi := math.Inf(1), math.Inf(-1)
	var most int64
	for i, run := range r.Runs {
		pts := run.ECDF()
		if len(pts) == 0 {
			continue
		}
		most = max(most, run.Requests)
		xy := make(plotter.XYs, 0, 2*len(pts)+1)
		txy := make(plotter.XYs, 0, 2*len(pts)+1)
		prev := 0.0
		for _, pt := range pts {
			x := pt.Ms + off
			xlo, xhi = min(xlo, x), max(xhi, x)
			xy = append(xy, plotter.XY{X: x, Y: prev}, plotter.XY{X: x, Y: pt.Fraction})
			if 1-prev > 0 {
				txy = append(txy, plotter.XY{X: x, Y: 1 - prev})
			}
			if 1-pt.Fraction > 1e-12 {
				txy = append(txy, plotter.XY{X: x, Y: 1 - pt.Fraction})
			}
			prev = pt.Fraction
		}
		style := func(l *plotter.Line) {
			colors := palette()
			l.Color = colors[i%len(colors)]
			if (i/len(colors))%2 == 1 {
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			}
			l.Width = vg.Points(1.5)
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", run.Name, err)
		}
		style(line)
		top.Add(line)
		if len(txy) > 0 {
			tl, err := plotter.NewLine(txy)
			if err != nil {
				return fmt.Errorf("plot %s: %w", run.Name, err)
			}
			style(tl)
			tail.Add(tl)
		}
		label := run.Name
		if offset > 0 {
			label += fmt.Sprintf(" (+%s)", offset)
		}
		if run.Failures > 0 {
			label += fmt.Sprintf(" [%d of %d FAILED]", run.Failures, run.Requests)
		}
		leg.Add(label, line)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("plot %s: no measured requests to draw", path)
	}
	lo, hi := latencyRange(xlo, xhi)
	for _, p := range []*plot.Plot{top, tail} {
		p.X.Min, p.X.Max = lo, hi
	}
	tail.Y.Max = 1
	tail.Y.Min = min(1e-3, 0.5/float64(max(most, 1)))

	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	width, height := 11*vg.Inch, 10*vg.Inch
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	dc := draw.New(c)
	lr := leg.Rectangle(dc)
	legW := lr.Max.X - lr.Min.X + vg.Points(24)
	plots := draw.Crop(dc, 0, -legW, 0, 0)
	half := height / 2
	top.Draw(draw.Crop(plots, 0, 0, half, 0))
	tail.Draw(draw.Crop(plots, 0, 0, 0, -half))
	leg.Draw(draw.Crop(dc, width-legW+vg.Points(12), 0, 0, -vg.Points(24)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot: %w", err) // err names the file
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot: %w", err) // err names the file
	}
	return nil
}

// latencyRange pads the curves' span [lo, hi] by 4 % of its log width on
// each side (1 % of the value for a single point): the axis follows the
// spread of the latencies, however large the offset added to them.
func latencyRange(lo, hi float64) (float64, float64) {
	if !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 0) {
		return 0.001, 1000
	}
	if hi/lo < 1.0001 {
		return lo / 1.01, hi * 1.01
	}
	pad := math.Pow(hi/lo, 0.04)
	return lo / pad, hi * pad
}

// tailTicks marks the tail view's decades with the percentile read there.
type tailTicks struct{}

func (tailTicks) Ticks(lo, hi float64) []plot.Tick {
	names := map[int]string{0: "1 (all)", -1: "0.1 (p90)", -2: "0.01 (p99)", -3: "0.001 (p99.9)", -4: "1e-4 (p99.99)", -5: "1e-5 (p99.999)"}
	var ticks []plot.Tick
	for e := 0; e >= -9; e-- {
		v := math.Pow10(e)
		if v < lo*0.999 || v > hi*1.001 {
			continue
		}
		label, ok := names[e]
		if !ok {
			label = strconv.FormatFloat(v, 'g', 1, 64)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// logTicks labels 1, 2 and 5 times each power of ten (with unlabelled minor
// ticks between), so a curve between 30 and 150 ms still has readable
// numbers under it. A range too narrow for those (latencies plus a large
// offset: 30.2 to 32 ms) gets evenly spaced labelled ticks instead, so a
// comparison inside it can still be read.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	var ticks []plot.Tick
	labelled := 0
	for dec := math.Pow10(int(math.Floor(math.Log10(lo)))); dec <= hi; dec *= 10 {
		for m := 1; m < 10; m++ {
			v := float64(m) * dec
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 || (hi/lo < 20 && m != 7 && m != 9) {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled >= 3 {
		return ticks
	}
	return linearTicks(lo, hi)
}

// linearTicks labels 4 to 16 evenly spaced round values in [lo, hi].
func linearTicks(lo, hi float64) []plot.Tick {
	raw := (hi - lo) / 8
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
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
