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

// plotECDF draws one ECDF curve per run on a log latency axis, with offset
// added to every latency (the client's round trip, as in the reference
// figure) and printed in the legend, which sits in its own column to the
// right of the plot. The format follows the file's extension (.png, .svg).
func plotECDF(path string, r *Report, offset time.Duration) error {
	p := plot.New()
	off := float64(offset) / 1e6
	p.Title.Text = fmt.Sprintf("tbhost bench %s: latency ECDF", r.Command)
	p.X.Label.Text = "latency per request (ms, log scale)"
	if offset > 0 {
		p.X.Label.Text = fmt.Sprintf("latency per request + %s offset (ms, log scale)", offset)
	}
	p.Y.Label.Text = "fraction of requests at most x"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = fractionTicks{}
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(10)
	if offset > 0 {
		leg.Add(fmt.Sprintf("every curve: latency + %s", offset))
	}
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
		colors := palette()
		line.Color = colors[i%len(colors)]
		if (i/len(colors))%2 == 1 {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		line.Width = vg.Points(1.5)
		p.Add(line)
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
	p.X.Min, p.X.Max = p.X.Min*0.9, p.X.Max*1.1

	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	width, height := 11*vg.Inch, 5.5*vg.Inch
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	dc := draw.New(c)
	lr := leg.Rectangle(dc)
	legW := lr.Max.X - lr.Min.X + vg.Points(24)
	p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	leg.Draw(draw.Crop(dc, width-legW+vg.Points(12), 0, 0, -vg.Points(24)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
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
