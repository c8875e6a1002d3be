package broker

import "github.com/lockstep-dev/lockstep/internal/osbapi"

// The OSB wire types under the names this package's callers still use;
// the rename of this package to osbclient rewrites those callers to
// osbapi and removes this file.
type (
	Catalog                = osbapi.Catalog
	Service                = osbapi.Service
	Plan                   = osbapi.Plan
	ServicePlan            = osbapi.ServicePlan
	Schemas                = osbapi.Schemas
	ServiceInstanceSchemas = osbapi.ServiceInstanceSchemas
	ServiceBindingSchemas  = osbapi.ServiceBindingSchemas
	InputParameters        = osbapi.InputParameters
	MaintenanceInfo        = osbapi.MaintenanceInfo
	Context                = osbapi.Context
	InstanceMetadata       = osbapi.InstanceMetadata
	BindingMetadata        = osbapi.BindingMetadata
	Binding                = osbapi.Binding
	Endpoint               = osbapi.Endpoint
	BindResource           = osbapi.BindResource
	PreviousValues         = osbapi.PreviousValues
	State                  = osbapi.State
	GetInstanceResponse    = osbapi.GetInstanceResponse
)

// Constants of the OSB wire model under their former names.
const (
	StateInProgress                  = osbapi.StateInProgress
	StateSucceeded                   = osbapi.StateSucceeded
	StateFailed                      = osbapi.StateFailed
	HeaderAPIVersion                 = osbapi.HeaderAPIVersion
	HeaderOriginatingIdentity        = osbapi.HeaderOriginatingIdentity
	HeaderRequestIdentity            = osbapi.HeaderRequestIdentity
	APIVersion                       = osbapi.APIVersion
	Platform                         = osbapi.KubernetesPlatform
	ErrorCodeAsyncRequired           = osbapi.ErrorCodeAsyncRequired
	ErrorCodeConcurrency             = osbapi.ErrorCodeConcurrency
	ErrorCodeRequiresApp             = osbapi.ErrorCodeRequiresApp
	ErrorCodeMaintenanceInfoConflict = osbapi.ErrorCodeMaintenanceInfoConflict
)
