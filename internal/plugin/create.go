package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// instanceFlags are the flags that describe a ServiceInstance.
type instanceFlags struct {
	service, plan, broker string
	params                parameters
	waitFlags
}

func (f *instanceFlags) add(s *session, cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.service, "service", "", "the service, as the broker's catalog names it (kubectl lockstep marketplace)")
	cmd.Flags().StringVar(&f.plan, "plan", "", "the plan")
	cmd.Flags().StringVar(&f.broker, "broker", "", "the ServiceBroker (lockstep picks the only one when there is one)")
	_ = cmd.MarkFlagRequired("service")
	_ = cmd.MarkFlagRequired("plan")
	f.params.addFlags(cmd)
	f.waitFlags.add(cmd)
	s.completeFlag(cmd, "service", s.completeServices)
	s.completeFlag(cmd, "plan", s.completePlanNames)
	s.completeFlag(cmd, "broker", s.completeBrokers)
}

func (f *waitFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wait, "wait", true, "wait until the object is Ready, showing what lockstep reports meanwhile")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait")
}

// instance builds the ServiceInstance the flags describe.
func (f *instanceFlags) instance(ns, name string) (*v1alpha1.ServiceInstance, error) {
	params, from, err := f.params.build()
	if err != nil {
		return nil, err
	}
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceInstanceSpec{BrokerName: f.broker, ServiceName: f.service, PlanName: f.plan,
			Parameters: params, ParametersFrom: from},
	}, nil
}

// bindingFlags are the flags that describe a ServiceBinding.
type bindingFlags struct {
	instance, secretName string
	params               parameters
	waitFlags
}

func (f *bindingFlags) add(s *session, cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.instance, "instance", "", "the ServiceInstance to bind, in the same namespace")
	cmd.Flags().StringVar(&f.secretName, "secret-name", "", "the Secret that receives the credentials (default: the binding's name)")
	_ = cmd.MarkFlagRequired("instance")
	f.params.addFlags(cmd)
	f.waitFlags.add(cmd)
	s.completeFlag(cmd, "instance", s.completeObjects(v1alpha1.KindServiceInstance))
}

// binding builds the ServiceBinding the flags describe.
func (f *bindingFlags) binding(ns, name string) (*v1alpha1.ServiceBinding, error) {
	params, from, err := f.params.build()
	if err != nil {
		return nil, err
	}
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ServiceBindingSpec{InstanceName: f.instance, SecretName: f.secretName, Parameters: params, ParametersFrom: from},
	}, nil
}

func (s *session) provisionCommand() *cobra.Command {
	var f instanceFlags
	cmd := &cobra.Command{
		Use:   "provision NAME --service SERVICE --plan PLAN [-p key=value]...",
		Short: "Create a ServiceInstance (the broker provisions it during admission) and wait until it is Ready",
		Example: "  kubectl lockstep provision db --service quick --plan small -p region=eu -p size=2\n" +
			"  kubectl lockstep provision db --service quick --plan small --param-file params.yaml --from-secret db-admin",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			si, err := f.instance(ns, args[0])
			if err != nil {
				return err
			}
			_, err = s.create(cmd.Context(), c, si, "created", f.waitFlags)
			return err
		},
	}
	f.add(s, cmd)
	return cmd
}

func (s *session) bindCommand() *cobra.Command {
	var f bindingFlags
	cmd := &cobra.Command{
		Use:     "bind NAME --instance INSTANCE [-p key=value]...",
		Short:   "Create a ServiceBinding (the broker binds during admission) and wait until its credentials are in its Secret",
		Example: "  kubectl lockstep bind db-creds --instance db -p role=read",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			sb, err := f.binding(ns, args[0])
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
		Use:     "instance NAME --external-id ID --service SERVICE --plan PLAN [-p key=value]...",
		Short:   "Adopt an instance the broker holds under ID",
		Example: "  kubectl lockstep adopt instance legacy-db --external-id 6a1c... --service quick --plan small -p region=eu -p size=2",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := s.client()
			if err != nil {
				return err
			}
			si, err := fi.instance(ns, args[0])
			if err != nil {
				return err
			}
			si.Spec.ExternalID = instanceID
			si.Annotations = map[string]string{v1alpha1.AnnotationAdopt: "true"}
			_, err = s.create(cmd.Context(), c, si, "adopted", fi.waitFlags)
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
			sb, err := fb.binding(ns, args[0])
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
