package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// target is where a store connects, for messages: never the password.
type target struct {
	host     string
	port     uint16
	database string
	user     string
}

func (t target) addr() string { return net.JoinHostPort(t.host, strconv.Itoa(int(t.port))) }

// Explain turns a failed connection into the cause an operator can act on (server down
// or wrong port, wrong host name, wrong credentials, missing database), naming the
// server, user and database it tried and never the password. It returns "" for an error
// that is not about reaching the database.
func (s *Store) Explain(err error) string {
	if err == nil {
		return ""
	}
	t := s.target
	var pgErr *pgconn.PgError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
		// invalid_password and invalid_authorization_specification (pg_hba.conf).
		return fmt.Sprintf("authentication failed for user %q at %s: %s", t.user, t.addr(), pgErr.Message)
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		return fmt.Sprintf("database %q does not exist on %s", t.database, t.addr())
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection refused at %s: is PostgreSQL running there, and are the host and port right?", t.addr())
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("host %q not found: %s", t.host, dnsErr.Err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("no answer from %s in time: is a firewall dropping the connection?", t.addr())
	case errors.As(err, &pgErr):
		return fmt.Sprintf("the server at %s refused the connection: %s (SQLSTATE %s)", t.addr(), pgErr.Message, pgErr.Code)
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Sprintf("cannot connect to %s as user %q", t.addr(), t.user)
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
