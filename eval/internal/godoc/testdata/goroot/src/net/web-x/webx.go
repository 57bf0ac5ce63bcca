// Package webx sorts between net/web and net/web/sub.
package webx
