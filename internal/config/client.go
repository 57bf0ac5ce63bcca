package config

import (
	"os"
)

// LoadClient reads the configuration at path for a client of the daemon
// (contextd query and servers, the client package): what it needs is where
// the daemon listens and how to authenticate (listen, auth, tls), and
// those are read and validated as Load reads them. The servers are not
// resolved: Servers is nil, and a server's unset ${VAR}, bad url or
// missing command, which only the daemon needs, is no error here. The
// file must still parse, and a misspelt key is still an error.
func LoadClient(path string) (*Config, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	return ParseClient(path, data, os.LookupEnv)
}

// ParseClient is LoadClient on data as if read from path; lookup resolves
// ${VAR} references (in auth and tls).
func ParseClient(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return parse(path, data, lookup, true)
}
