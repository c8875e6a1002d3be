package server

import (
	"encoding/base64"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckVersion(t *testing.T) {
	tests := []struct {
		v    string
		want string // error fragment; empty: accepted
	}{
		{"2.17", ""},
		{"2.14", ""},
		{"2.20", ""},
		{" 2.15 ", ""},
		{"", "header is required"},
		{"2.13", "2.13 is not supported"},
		{"1.99", "not supported"},
		{"3.0", "not supported"},
		{"2", "not MAJOR.MINOR"},
		{"two.seventeen", "not MAJOR.MINOR"},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			err := checkVersion(tt.v)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "accepts 2.14 or later")
		})
	}
}

func TestParseIdentity(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name         string
		header       string
		wantPlatform string
		wantValue    string
		wantErr      string
	}{
		{"absent", "", "", "", ""},
		{"kubernetes user", "kubernetes " + b64([]byte(`{"username": "alice", "uid": "1"}`)), "kubernetes", `{"uid":"1","username":"alice"}`, ""},
		{"unpadded base64", "cloudfoundry " + base64.RawStdEncoding.EncodeToString([]byte(`{"user_id":"x"}`)), "cloudfoundry", `{"user_id":"x"}`, ""},
		{"no value", "kubernetes", "", "", "platform or value missing"},
		{"not base64", "kubernetes ***", "", "", "not base64"},
		{"not an object", "kubernetes " + b64([]byte(`"alice"`)), "", "", "not a JSON object"},
		{"null", "kubernetes " + b64([]byte(`null`)), "", "", "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := parseIdentity(tt.header)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.header == "" {
				assert.Nil(t, id)
				return
			}
			assert.Equal(t, tt.wantPlatform, id.Platform)
			assert.JSONEq(t, tt.wantValue, string(id.Value))
		})
	}
}

func TestAuthorized(t *testing.T) {
	tests := []struct {
		name       string
		user, pass string
		set        bool
		want       bool
	}{
		{"right", "u", "p", true, true},
		{"wrong password", "u", "x", true, false},
		{"wrong user", "x", "p", true, false},
		{"none", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v2/catalog", nil)
			if tt.set {
				r.SetBasicAuth(tt.user, tt.pass)
			}
			assert.Equal(t, tt.want, authorized(r, "u", "p"))
		})
	}
}
