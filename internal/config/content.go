package config

import (
	"fmt"
	"strconv"
	"time"
)

// parseContent reads the content index's bounds: content_bytes_per_server
// (bytes; -1 for no bound per server) and content_pass_time (a duration;
// "0" for no bound).
func (c *Config) parseContent(f *file) error {
	if f.ContentBytes != nil {
		n, err := strconv.ParseInt(*f.ContentBytes, 10, 64)
		if err != nil {
			return fmt.Errorf("field content_bytes_per_server: %q is not a number of bytes (or -1 for no bound)", *f.ContentBytes)
		}
		switch {
		case n == -1:
			c.ContentBytes = -1
		case n < 1024:
			return fmt.Errorf("field content_bytes_per_server: %d bytes is too small (at least 1024, or -1 for no bound)", n)
		default:
			c.ContentBytes = n
		}
	}
	if f.ContentPassTime != "" {
		d, err := time.ParseDuration(f.ContentPassTime)
		if err != nil || d < 0 {
			return fmt.Errorf("field content_pass_time: %q is not a duration like 90s or 10m (0 for no bound)", f.ContentPassTime)
		}
		if d == 0 {
			d = -1 // "0" means no bound, as documented
		}
		c.ContentPassTime = d
	}
	return nil
}
