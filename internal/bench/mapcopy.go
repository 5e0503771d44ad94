package bench

// repMovsbFrom: the smallest copy mapCopy makes with REP MOVSB on amd64
// (mapcopy_amd64.go). Below a few hundred bytes its start-up costs more
// than Go's copy. The tests copy around it on every architecture.
const repMovsbFrom = 512
