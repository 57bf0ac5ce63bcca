// Package winonly is built for windows only.
package winonly
