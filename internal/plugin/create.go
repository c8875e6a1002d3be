package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/typed/render"
)

// instanceFlags are the flags that describe an instance: a
// ServiceInstance, or an object of a typed kind (--kind).
type instanceFlags struct {
	service, plan, broker, kind string
	params                      parameters
	waitFlags
}

func (f *instanceFlags) add(s *session, cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.service, "service", "", "the service, as the broker's catalog names it (kubectl lockstep marketplace); not with --kind")
	cmd.Flags().StringVar(&f.plan, "plan", "", "the plan")
	cmd.Flags().StringVar(&f.broker, "broker", "", "the ServiceBroker (lockstep picks the only one when there is one; a typed kind's is its own)")
	cmd.Flags().StringVar(&f.kind, "kind", "", "a typed kind (its kind, plural or short name: kubectl api-resources --api-group="+render.Group+
		"): the instance is an object of that kind, whose service it is")
	_ = cmd.MarkFlagRequired("plan")
	f.params.addFlags(cmd)
	f.waitFlags.add(cmd)
	s.completeFlag(cmd, "service", s.completeServices)
	s.completeFlag(cmd, "plan", s.completePlanNames)
	s.completeFlag(cmd, "broker", s.completeBrokers)
	s.completeFlag(cmd, "kind", s.completeTypedKinds)
}

func (f *waitFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wait, "wait", true, "wait until the object is Ready, showing the operation and where it stands meanwhile")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait")
}

// instance builds the instance the flags describe: a ServiceInstance, or
// with --kind an object of that typed kind.
func (f *instanceFlags) instance(s *session, ns, name string) (client.Object, error) {
	params, from, err := f.params.build()
	if err != nil {
		return nil, err
	}
	switch {
	case f.kind != "" && f.service != "":
		return nil, fmt.Errorf("--kind %s is the service of its kind: leave --service out", f.kind)
	case f.kind == "" && f.service == "":
		return nil, fmt.Errorf("name the service (--service, kubectl lockstep marketplace lists them), or a typed kind (--kind)")
	case f.kind == "":
		return &v1alpha1.ServiceInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ServiceInstanceSpec{BrokerName: f.broker, ServiceName: f.service, PlanName: f.plan,
				Parameters: params, ParametersFrom: from},
		}, nil
	}
	kind, err := s.kindFor(f.kind)
	if err != nil {
		return nil, err
	}
	if !kind.typed() {
		return nil, fmt.Errorf("--kind %s is not a typed kind (kubectl api-resources --api-group=%s lists them); for a ServiceInstance, name its --service", f.kind, render.Group)
	}
	spec := map[string]any{"plan": f.plan}
	if f.broker != "" {
		spec["brokerName"] = f.broker
	}
	if params != nil {
		var m map[string]any
		if err := json.Unmarshal(params.Raw, &m); err != nil {
			return nil, fmt.Errorf("the parameters: %w", err)
		}
		spec["parameters"] = m
	}
	if len(from) > 0 {
		raw, err := json.Marshal(from)
		if err != nil {
			return nil, err
		}
		var list []any
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		spec["parametersFrom"] = list
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(kind.gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u, nil
}

// setExternalID sets the external id of an instance the flags built.
func setExternalID(obj client.Object, id string) {
	switch o := obj.(type) {
	case *v1alpha1.ServiceInstance:
		o.Spec.ExternalID = id
	case *unstructured.Unstructured:
		_ = unstructured.SetNestedField(o.Object, id, "spec", "externalID")
	}
}

// bindingFlags are the flags that describe a ServiceBinding.
type bindingFlags struct {
	instance, secretName string
	params               parameters
	waitFlags
}

func (f *bindingFlags) add(s *session, cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.instance, "instance", "", "the instance to bind, in the same namespace: the name of a ServiceInstance, or KIND/NAME of an object of a typed kind")
	cmd.Flags().StringVar(&f.secretName, "secret-name", "", "the Secret that receives the credentials (default: the binding's name)")
	_ = cmd.MarkFlagRequired("instance")
	f.params.addFlags(cmd)
	f.waitFlags.add(cmd)
	s.completeFlag(cmd, "instance", s.completeObjects(v1alpha1.KindServiceInstance))
}

// binding builds the ServiceBinding the flags describe.
func (f *bindingFlags) binding(s *session, ns, name string) (*v1alpha1.ServiceBinding, error) {
	params, from, err := f.params.build()
	if err != nil {
		return nil, err
	}
	sb := &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: f.instance, SecretName: f.secretName, Parameters: params, ParametersFrom: from},
	}
	if k, instance, ok := strings.Cut(f.instance, "/"); ok {
		kind, err := s.kindFor(k)
		if err != nil {
			return nil, err
		}
		switch {
		case kind.typed():
			sb.Spec.InstanceKind = kind.gvk.Kind
		case kind != instanceKind:
			return nil, fmt.Errorf("--instance %s: a binding binds an instance (a ServiceInstance, or an object of a typed kind)", f.instance)
		}
		sb.Spec.InstanceName = instance
	}
	return sb, nil
}

func (s *session) provisionCommand() *cobra.Command {
	var f instanceFlags
	cmd := &cobra.Command{
		Use:   "provision NAME (--service SERVICE | --kind KIND) --plan PLAN [-p key=value]...",
		Short: "Create an instance (the broker provisions it during admission) and wait until it is Ready",
		Long: "provision creates a ServiceInstance of --service, or with --kind an object of that typed kind, and waits " +
			"until it is Ready, showing the operation and where it stands while the broker still works on it.",
		Example: "  kubectl lockstep provision db --service quick --plan small -p region=eu -p size=2\n" +
			"  kubectl lockstep provision orders --kind quick --plan small -p region=eu -p size=2\n" +
			"  kubectl lockstep provision db --service quick --plan small --param-file params.yaml --from-secret db-admin",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			obj, err := f.instance(s, ns, args[0])
			if err != nil {
				return err
			}
			_, err = s.create(cmd.Context(), c, obj, "created", f.waitFlags)
			return err
		},
	}
	f.add(s, cmd)
	return cmd
}

func (s *session) bindCommand() *cobra.Command {
	var f bindingFlags
	cmd := &cobra.Command{
		Use:   "bind NAME --instance INSTANCE|KIND/NAME [-p key=value]...",
		Short: "Create a ServiceBinding (the broker binds during admission) and wait until its credentials are in its Secret",
		Example: "  kubectl lockstep bind db-creds --instance db -p role=read\n" +
			"  kubectl lockstep bind orders-creds --instance quick/orders -p role=read",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			sb, err := f.binding(s, ns, args[0])
			if err != nil {
				return err
			}
			b, err := s.create(cmd.Context(), c, sb, "created", f.waitFlags)
			if err != nil || !f.wait {
				return err
			}
			s.printSecret(cmd.Context(), c, b.obj.(*v1alpha1.ServiceBinding))
			return nil
		},
	}
	f.add(s, cmd)
	return cmd
}

// create writes obj (lockstep carries it out at the broker during
// admission, or refuses it: the refusal is returned as it came) and waits
// until it is Ready.
func (s *session) create(ctx context.Context, c client.Client, obj client.Object, done string, w waitFlags) (brokered, error) {
	if err := c.Create(ctx, obj); err != nil {
		return brokered{}, err
	}
	b := view(obj)
	fmt.Fprintf(s.out(), "%s %s\n", b.resource(), done)
	if !w.wait {
		return b, nil
	}
	return s.waitReady(ctx, c, b, w.timeout)
}

// printSecret says where a binding's credentials are: the Secret and its
// keys, never a value. A user who may not read the Secret is told its name.
func (s *session) printSecret(ctx context.Context, c client.Client, sb *v1alpha1.ServiceBinding) {
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Spec.SecretName}, &secret); err != nil {
		fmt.Fprintf(s.out(), "the credentials are in Secret %s\n", sb.Spec.SecretName)
		return
	}
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(s.out(), "the credentials are in Secret %s (keys: %s)\n", secret.Name, strings.Join(keys, ", "))
}

func (s *session) adoptCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adopt",
		Short: "Bring an instance or binding that already exists at its broker under lockstep",
		Long: "adopt creates the object with the broker's id in spec.externalID and the annotation " +
			v1alpha1.AnnotationAdopt + "=true: lockstep reads what the broker holds instead of provisioning (or binding), " +
			"and persists the object only if it equals the spec; otherwise it refuses with the broker's values, " +
			"printed here as they came. The broker's catalog must let lockstep read its instances (bindings).",
	}
	var fi instanceFlags
	var instanceID string
	instance := &cobra.Command{
		Use:   "instance NAME|KIND/NAME --external-id ID (--service SERVICE | --kind KIND) --plan PLAN [-p key=value]...",
		Short: "Adopt an instance the broker holds under ID: a ServiceInstance, or an object of a typed kind (KIND/NAME or --kind)",
		Example: "  kubectl lockstep adopt instance legacy-db --external-id 6a1c... --service quick --plan small -p region=eu -p size=2\n" +
			"  kubectl lockstep adopt instance quick/legacy --external-id 6a1c... --plan small -p region=eu -p size=2",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			name := args[0]
			if k, rest, ok := strings.Cut(name, "/"); ok {
				kind, err := s.kindFor(k)
				if err != nil {
					return err
				}
				switch {
				case kind.typed():
					fi.kind = k
				case kind != instanceKind:
					return fmt.Errorf("adopt instance %s: name an instance (a ServiceInstance, or KIND/NAME of a typed kind); adopt binding adopts a binding", name)
				}
				name = rest
			}
			obj, err := fi.instance(s, ns, name)
			if err != nil {
				return err
			}
			setExternalID(obj, instanceID)
			obj.SetAnnotations(map[string]string{v1alpha1.AnnotationAdopt: "true"})
			_, err = s.create(cmd.Context(), c, obj, "adopted", fi.waitFlags)
			return err
		},
	}
	fi.add(s, instance)
	instance.Flags().StringVar(&instanceID, "external-id", "", "the instance's id at the broker (OSB instance_id)")
	_ = instance.MarkFlagRequired("external-id")

	var fb bindingFlags
	var bindingID string
	binding := &cobra.Command{
		Use:     "binding NAME --external-id ID --instance INSTANCE",
		Short:   "Adopt a binding the broker holds under ID; its credentials go into its Secret",
		Example: "  kubectl lockstep adopt binding legacy-creds --external-id 9f2e... --instance legacy-db",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			sb, err := fb.binding(s, ns, args[0])
			if err != nil {
				return err
			}
			sb.Spec.ExternalID = bindingID
			sb.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"}
			b, err := s.create(cmd.Context(), c, sb, "adopted", fb.waitFlags)
			if err != nil || !fb.wait {
				return err
			}
			s.printSecret(cmd.Context(), c, b.obj.(*v1alpha1.ServiceBinding))
			return nil
		},
	}
	fb.add(s, binding)
	binding.Flags().StringVar(&bindingID, "external-id", "", "the binding's id at the broker (OSB binding_id)")
	_ = binding.MarkFlagRequired("external-id")
	cmd.AddCommand(instance, binding)
	return cmd
}
