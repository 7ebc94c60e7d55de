// Package alert turns what the outbox.AlertSource values report into owner alerts
// (docs/operations.md, "Alerts"; docs/design.md, "Alerts"). An Evaluator polls its
// sources every interval and, per (Kind, Key), opens an alert the first time a condition
// is reported, sends at most one "still happening" notice per re-notify window while it
// keeps being reported, and a "resolved" notice once it is not. The state lives in the
// store (outbox.AlertStore), whose conditional writes decide each notice once across
// every instance; a notice's messages are ordinary outbox deliveries of a system
// submission of form outbox.AlertsForm, written in the same transaction, so the worker
// sends, retries and records them like any other. A notice never travels through the
// channel or to the destination its condition says is failing.
package alert
