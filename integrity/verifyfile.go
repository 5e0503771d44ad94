package integrity

import (
	"context"
	"fmt"
	"os"
)

// FileVerifier checks single files against the published lists, the same
// checks Verify makes (size, embedded trailer, the digest when a checksum
// list is given), for a caller that learns of files one at a time: a copy
// verifying each table as it lands.
type FileVerifier struct {
	opts      VerifyOptions
	byContent contentByValue
	throttle  *Throttle
}

// NewFileVerifier prepares the lists of opts (Dirs, Jobs, StatePath and
// Complete are not used).
func NewFileVerifier(opts VerifyOptions) *FileVerifier {
	return &FileVerifier{opts: opts, byContent: contentIndex(opts), throttle: NewThrottle(opts.Rate, opts.Clock)}
}

// Listed reports whether the lists name the file.
func (v *FileVerifier) Listed(name string) bool { return listedAnywhere(name, v.opts) }

// Check verifies the file at path under the table name it has or will
// have (a copy may land under a temporary name). The verdict is
// VerdictOK, VerdictMismatch (Problems say what differs),
// VerdictUnreadable or VerdictUnlisted; err is only the context's.
func (v *FileVerifier) Check(ctx context.Context, path, name string) (FileResult, error) {
	r := FileResult{Name: name, Path: path}
	st, err := os.Stat(path)
	if err != nil {
		r.Verdict = VerdictUnreadable
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	if !st.Mode().IsRegular() {
		r.Verdict = VerdictUnreadable
		r.Problems = append(r.Problems, fmt.Sprintf("%s is not a regular file", path))
		return r, nil
	}
	r.Size = st.Size()
	cheapChecks(&r, v.opts, v.byContent)
	if r.Verdict == "" && v.opts.Checksums != nil {
		if want, ok := v.opts.Checksums.Digests[name]; ok {
			r.Expected = want
			buf := make([]byte, 1<<20)
			sum, _, err := hashFile(ctx, path, v.opts.Checksums.Algo, buf, v.throttle, v.opts.Progress)
			switch {
			case ctx.Err() != nil:
				return r, ctx.Err()
			case err != nil:
				r.Verdict = VerdictUnreadable
				r.Problems = append(r.Problems, err.Error())
			default:
				r.Actual = sum
				if sum != want {
					r.Problems = append(r.Problems, fmt.Sprintf("%s differs: published %s, file %s", v.opts.Checksums.Algo, want, sum))
					if other := v.byContent.digest[sum]; other != "" && other != name {
						r.Problems = append(r.Problems, fmt.Sprintf("the file holds %s's bytes (its %s is the one published for %s)", other, v.opts.Checksums.Algo, other))
					}
				}
			}
		}
	}
	if r.Verdict == "" {
		switch {
		case len(r.Problems) > 0:
			r.Verdict = VerdictMismatch
		case !listedAnywhere(name, v.opts):
			r.Verdict = VerdictUnlisted
		default:
			r.Verdict = VerdictOK
		}
	}
	return r, nil
}
