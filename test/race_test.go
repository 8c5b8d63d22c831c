//go:build race

package test

// raceEnabled: the tests run with -race, so the binary under test is built
// with the race detector too.
const raceEnabled = true
