package pgstore

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Failure names what went wrong with the store in words that quote
// neither the database's messages nor the connection's settings: the
// SQLSTATE code a PostgreSQL error carries, a refused connection, a host
// name that did not resolve, no answer in time. The error itself, for the
// log, may hold the host, user and database names, and a server's message
// may quote values.
func Failure(err error) string {
	var pe *pgconn.PgError
	var dns *net.DNSError
	var errno syscall.Errno
	switch {
	case errors.As(err, &pe):
		msg := "the database answered SQLSTATE " + pe.Code
		switch {
		case len(pe.Code) == 5 && pe.Code[:2] == "28":
			msg += " (it refused the store's user or password)"
		case pe.Code == "3D000":
			msg += " (the store's database does not exist)"
		case len(pe.Code) == 5 && pe.Code[:2] == "53":
			msg += " (it is out of a resource: disk, memory or connections)"
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &dns):
		return "the database's host name did not resolve"
	case errors.As(err, &errno):
		return "cannot reach the database: " + errno.Error()
	}
	return "the store failed (the log says how)"
}
