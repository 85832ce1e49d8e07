// Package drift holds the tests that measure the official MCP SDKs' clients
// against the model's profiles of them (clients.Profile): a server that
// breaks a call's stream and then resets, or answers 503 to, every resume
// shows each SDK's delays between reconnect attempts, how many attempts it
// makes, whether it honours a retry: hint and which failures it retries.
// The tests fail when a profile's numbers drift from what the SDK does.
package drift
