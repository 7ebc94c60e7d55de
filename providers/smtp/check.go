package smtp

import (
	"fmt"
	"net"
)

// CheckTLS accepts the TLS modes of Config.TLS. The Caddyfile parser
// (internal/caddyconf/caddyfile_email.go) runs it on the tls line, so a typo is reported at that line.
func CheckTLS(mode string) error {
	switch mode {
	case StartTLS, Implicit, NoTLS:
		return nil
	}
	return fmt.Errorf("tls %q: want starttls, implicit or none", mode)
}

// CheckAddress accepts a relay's host:port, and refuses plain text (tls none) to
// anything but a loopback address: the password and every visitor's message would cross
// the network readable. New checks the same at provision.
func CheckAddress(address, mode string) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("address %q is not HOST:PORT", address)
	}
	if mode == NoTLS && !IsLoopback(host) {
		return fmt.Errorf("tls none sends in plain text and is only allowed to a loopback address, not %s", host)
	}
	return nil
}
