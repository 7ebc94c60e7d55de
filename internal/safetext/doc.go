// Package safetext makes stored text safe for the two places an operator opens it that
// interpret text rather than show it: a spreadsheet reading a CSV export (a cell that
// starts like a formula is run as one) and a terminal (escape sequences retitle the
// window, rewrite what is on screen or, on some terminals, answer back with input).
// Submissions are written by anyone on the internet, so both must treat every stored
// string as hostile. It also holds the one list of the bidi controls and invisible
// characters (bidi.go): removed or isolated where a visitor's value meets an operator's
// text (chat messages, e-mail subjects and bodies), shown as marked escapes in the inbox. The package knows nothing of Caddy or the outbox; the exports
// (inbox/export.go, which internal/adminapi/export.go shares) and internal/command use it.
package safetext
