//go:build race

package bench

// raceEnabled: built with -race, whose instrumentation allocates, so the
// allocation counts of the tests do not hold.
const raceEnabled = true
