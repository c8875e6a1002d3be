package osbapi

// APIVersion is the OSB API version both sides speak.
const APIVersion = "2.17"

// Header names of the OSB API.
const (
	// HeaderAPIVersion carries the API version on every request.
	HeaderAPIVersion = "X-Broker-API-Version"
	// HeaderOriginatingIdentity names the platform user on whose behalf a
	// request is made: "<platform> <base64 of a JSON object>".
	HeaderOriginatingIdentity = "X-Broker-API-Originating-Identity"
	// HeaderRequestIdentity identifies one request; a broker echoes it.
	HeaderRequestIdentity = "X-Broker-API-Request-Identity"
)
