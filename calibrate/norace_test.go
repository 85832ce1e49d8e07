//go:build !race

package calibrate

const raceOn = false
