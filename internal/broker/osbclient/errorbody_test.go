package osbclient

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseErrorBody(t *testing.T) {
	yes := true
	tests := []struct {
		name     string
		body     string
		wantOK   bool
		wantCode string
		wantDesc string
	}{
		{name: "OSB code and description", body: `{"error":"ConcurrencyError","description":"busy"}`, wantOK: true,
			wantCode: "ConcurrencyError", wantDesc: "busy"},
		{name: "OSB code only", body: `{"error":"AsyncRequired"}`, wantOK: true, wantCode: "AsyncRequired"},
		{name: "description only", body: `{"description":"storageGB must be at most 1024"}`, wantOK: true,
			wantDesc: "storageGB must be at most 1024"},
		{name: "a sentence in error is the description", body: `{"error":"Missing organization_guid"}`, wantOK: true,
			wantDesc: "Missing organization_guid"},
		{name: "message field", body: `{"message":"plan is full"}`, wantOK: true, wantDesc: "plan is full"},
		{name: "errors array of strings", body: `{"errors":["Missing organization_guid","Missing space_guid"]}`, wantOK: true,
			wantDesc: "Missing organization_guid; Missing space_guid"},
		{name: "errors array of objects", body: `{"errors":[{"msg":"Missing organization_guid","param":"organization_guid"},{"detail":"bad plan"}]}`,
			wantOK: true, wantDesc: "Missing organization_guid; bad plan"},
		{name: "JSON:API errors with title", body: `{"errors":[{"status":"400","title":"Invalid space"}]}`, wantOK: true,
			wantDesc: "Invalid space"},
		{name: "error object", body: `{"error":{"message":"quota exceeded"}}`, wantOK: true, wantDesc: "quota exceeded"},
		{name: "description wins over the other shapes", body: `{"error":"BadThing","description":"the real reason","errors":["other"]}`,
			wantOK: true, wantCode: "BadThing", wantDesc: "the real reason"},
		{name: "empty object", body: `{}`, wantOK: true},
		{name: "not JSON", body: `<html>Bad Gateway</html>`},
		{name: "JSON but not an object", body: `["x"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseErrorBody([]byte(tt.body))
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.wantCode, got.code)
			assert.Equal(t, tt.wantDesc, got.description)
		})
	}

	got, _ := parseErrorBody([]byte(`{"error":"X","instance_usable":true,"update_repeatable":true}`))
	assert.Equal(t, &yes, got.instanceUsable)
	assert.Equal(t, &yes, got.updateRepeatable)
}
