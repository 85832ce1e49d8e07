// Package tsdk finds the official MCP TypeScript SDK that stormsim runs:
// the Node.js package in the module's node/ folder (package.json pins
// @modelcontextprotocol/sdk, package-lock.json fixes the rest; `make node`
// installs it with npm ci) and the node binary that runs its programs,
// node/server.mjs (the ts-sdk replica flavour) and node/clients.mjs (the
// ts-sdk clients).
package tsdk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// EnvDir names the node/ folder when stormsim runs outside its module.
const EnvDir = "STORMSIM_NODE_DIR"

// SDKVersion is the SDK version node/package.json pins.
const SDKVersion = "1.32.2"

// ErrMissing says that the SDK or Node.js is not installed.
var ErrMissing = errors.New("tsdk: the MCP TypeScript SDK is not installed")

// Dir is the node/ folder holding an installed SDK: $STORMSIM_NODE_DIR,
// else the first node/ folder with a package.json found going up from the
// working directory, then from the running executable's folder.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return checkDir(d)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "node", "package.json")); err == nil {
				return checkDir(filepath.Join(d, "node"))
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("%w: no node/package.json above the working directory or the executable; run stormsim from its module or set %s", ErrMissing, EnvDir)
}

func checkDir(d string) (string, error) {
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		return "", fmt.Errorf("%w in %s: run `make node` (npm ci there; it needs Node.js 20 and npm, see docs/live.md)", ErrMissing, abs)
	}
	return abs, nil
}

// Node is the node binary on PATH.
func Node() (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("%w: no node on PATH: install Node.js 20 and npm (see docs/live.md)", ErrMissing)
	}
	return p, nil
}

// Program is the node binary and the path of one of node/'s programs.
func Program(name string) (node, script string, err error) {
	dir, err := Dir()
	if err != nil {
		return "", "", err
	}
	node, err = Node()
	if err != nil {
		return "", "", err
	}
	return node, filepath.Join(dir, name), nil
}
