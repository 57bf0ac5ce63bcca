package mcp_test

import (
	"testing"
	"time"

	"github.com/contextd/contextd/internal/mcp"
)

// A malformed caching hint costs the hint, not the read: the go-sdk decodes
// ttlMs as an int and cacheScope as a string and would fail the whole
// resources/read on anything else. A bad ttlMs is dropped (immediately
// stale); a bad, or contradicted, cacheScope reads as "private"; repeated
// members that disagree take the conservative reading whatever their order.
func TestMalformedCacheHintsFailNoRead(t *testing.T) {
	tests := []struct {
		name  string
		hints string // JSON members appended to the read result
		ttl   time.Duration
		scope string
	}{
		{"fractional ttl", `,"ttlMs":1.5,"cacheScope":"public"`, 0, "public"},
		{"string ttl", `,"ttlMs":"60000","cacheScope":"public"`, 0, "public"},
		{"bool ttl", `,"ttlMs":true,"cacheScope":"public"`, 0, "public"},
		{"huge float ttl", `,"ttlMs":1e308,"cacheScope":"public"`, 0, "public"},
		{"exponent ttl", `,"ttlMs":6e4,"cacheScope":"public"`, 0, "public"},
		{"integer beyond int64", `,"ttlMs":99999999999999999999,"cacheScope":"public"`, 0, "public"},
		{"object ttl", `,"ttlMs":{"ms":1},"cacheScope":"public"`, 0, "public"},
		{"null ttl", `,"ttlMs":null,"cacheScope":"public"`, 0, "public"},
		{"numeric scope", `,"ttlMs":60000,"cacheScope":5`, time.Minute, "private"},
		{"array scope", `,"ttlMs":60000,"cacheScope":["public"]`, time.Minute, "private"},
		{"object scope", ` , "ttlMs" : 60000 , "cacheScope" : {"public":true} `, time.Minute, "private"},
		{"null scope", `,"ttlMs":60000,"cacheScope":null`, time.Minute, ""},
		{"well-formed", `,"ttlMs":60000,"cacheScope":"public"`, time.Minute, "public"},
		{"negative ttl", `,"ttlMs":-5,"cacheScope":"public"`, 0, "public"},
		{"private then public", `,"ttlMs":60000,"cacheScope":"private","cacheScope":"public"`, time.Minute, "private"},
		{"public then private", `,"ttlMs":60000,"cacheScope":"public","cacheScope":"private"`, time.Minute, "private"},
		{"public twice", `,"ttlMs":60000,"cacheScope":"public","cacheScope":"public"`, time.Minute, "public"},
		{"public then bad", `,"ttlMs":60000,"cacheScope":"public","cacheScope":7`, time.Minute, "private"},
		{"escaped duplicate", `,"ttlMs":60000,"cache\u0053cope":"private","cacheScope":"public"`, time.Minute, "private"},
		{"ttl twice, differing", `,"ttlMs":1000,"ttlMs":60000,"cacheScope":"public"`, 0, "public"},
		{"ttl twice, same", `,"ttlMs":60000,"ttlMs":60000,"cacheScope":"public"`, time.Minute, "public"},
		{"ttl twice, one bad", `,"ttlMs":60000,"ttlMs":"60000","cacheScope":"public"`, 0, "public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The text mentions the hints, and a content item carries its
			// own: only the result's top-level members are hints.
			sess := rawSession(t, map[string]string{"resources/read": `{"contents":[
				{"uri":"x://a","mimeType":"text/plain","text":"{\"ttlMs\":1.5,\"cacheScope\":5}","ttlMs":"x","_meta":{"cacheScope":[1]}},
				{"uri":"x://b","blob":"AAEC_w"}]` + tt.hints + `}`})
			got, hint, err := sess.ReadHint(t.Context(), "x://a")
			if err != nil {
				t.Fatalf("ReadHint failed: %v", err)
			}
			if len(got) != 2 || got[0].Text != `{"ttlMs":1.5,"cacheScope":5}` || string(got[1].Blob) != "\x00\x01\x02\xff" {
				t.Errorf("contents = %+v", got)
			}
			if want := (mcp.CacheHint{TTL: tt.ttl, Scope: tt.scope}); hint != want {
				t.Errorf("hint = %+v, want %+v", hint, want)
			}
		})
	}
}

// List results carry the same hints; a malformed one fails no list.
func TestMalformedCacheHintsFailNoList(t *testing.T) {
	sess := rawSession(t, map[string]string{
		"resources/list":           `{"resources":[{"uri":"x://a","name":"a"}],"ttlMs":1.5,"cacheScope":5}`,
		"resources/templates/list": `{"resourceTemplates":[{"uriTemplate":"x://{a}","name":"t"}],"ttlMs":"1","cacheScope":["x"]}`,
	})
	l, err := sess.ListResources(t.Context())
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("ListResources = %+v, %v", l, err)
	}
	tl, err := sess.ListTemplates(t.Context())
	if err != nil || len(tl.Items) != 1 {
		t.Fatalf("ListTemplates = %+v, %v", tl, err)
	}
}
