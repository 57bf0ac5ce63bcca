package pgstore_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contextd/contextd/internal/store/pgstore"
)

// Failure names the kind of a store's failure without the database's
// message or the connection's settings.
func TestFailureQuotesNeitherTheDatabaseNorTheSettings(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&pgconn.PgError{Severity: "FATAL", Code: "28P01", Message: `password authentication failed for user "planted-user"`}, "SQLSTATE 28P01 (it refused the store's user or password)"},
		{fmt.Errorf("failed to connect to `user=planted-user database=planted-db`: %w", &pgconn.PgError{Code: "3D000", Message: `database "planted-db" does not exist`}), "SQLSTATE 3D000 (the store's database does not exist)"},
		{&pgconn.PgError{Code: "22P02", Message: `invalid input syntax for type json`, Detail: `Token "planted" is invalid.`}, "the database answered SQLSTATE 22P02"},
		{fmt.Errorf("failed to connect to `host=planted.example user=planted-user`: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), "cannot reach the database: connection refused"},
		{fmt.Errorf("hostname resolving error: %w", &net.DNSError{Name: "planted.example", Err: "no such host", IsNotFound: true}), "did not resolve"},
		{fmt.Errorf("write planted: %w", context.DeadlineExceeded), "no answer in time"},
		{fmt.Errorf("planted: something else"), "the store failed (the log says how)"},
	} {
		got := pgstore.Failure(tc.err)
		if !strings.Contains(got, tc.want) || strings.Contains(got, "planted") {
			t.Errorf("Failure(%v) = %q; want %q, nothing planted", tc.err, got, tc.want)
		}
	}
}
