// Package doccheck holds the tests that keep the README and docs/ true: the
// README's example commands exit as it says, its deploy-restart table is
// what `make sim SCENARIO=deploy-restart` prints, every docs/ file is linked
// from it, and the project cites its own docs/domain.md.
package doccheck
