package smtp

import "testing"

// The parser-time checks of an smtp block name the bad value; plain text goes only to a
// loopback relay.
func TestCheckTLSAndAddress(t *testing.T) {
	for _, mode := range []string{StartTLS, Implicit, NoTLS} {
		if err := CheckTLS(mode); err != nil {
			t.Errorf("tls %s: %v", mode, err)
		}
	}
	if err := CheckTLS("ssl"); err == nil || err.Error() != `tls "ssl": want starttls, implicit or none` {
		t.Errorf("tls ssl: %v", err)
	}
	for _, tc := range []struct{ address, mode, want string }{
		{"smtp.example.com:587", StartTLS, ""},
		{"127.0.0.1:25", NoTLS, ""},
		{"localhost:25", NoTLS, ""},
		{"smtp.example.com", StartTLS, `address "smtp.example.com" is not HOST:PORT`},
		{":587", StartTLS, `address ":587" is not HOST:PORT`},
		{"smtp.example.com:25", NoTLS, "tls none sends in plain text and is only allowed to a loopback address, not smtp.example.com"},
	} {
		got := ""
		if err := CheckAddress(tc.address, tc.mode); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s (%s): %q, want %q (empty: accepted)", tc.address, tc.mode, got, tc.want)
		}
	}
}
