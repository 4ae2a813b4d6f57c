package kubernetes_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// exampleOverlay is the overlay the tests render: the base, its
// components and the committed SAMPLE inputs.
const exampleOverlay = "overlays/example"

// newDecoder decodes the kinds a sluice deployment may hold, strictly:
// an unknown or duplicate field is an error, and so is an unknown kind.
func newDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, rbacv1.AddToScheme,
		monitoringv1.AddToScheme, gatewayv1.Install,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// stageTree copies this directory's kustomizations, manifests, configs
// and the example overlay's inputs into a temporary directory (for tests
// that change a file before rendering) and returns the copy's root.
func stageTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, path), 0o755)
		}
		if strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// render runs kustomize over dir as `kubectl apply -k` does and decodes
// every object strictly.
func render(t *testing.T, dir string) ([]runtime.Object, error) {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	dec := newDecoder(t)
	var objs []runtime.Object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		obj, _, err := dec.Decode(y, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// deployment is the rendered base, sorted by kind.
type deployment struct {
	all             []runtime.Object
	statefulSets    []*appsv1.StatefulSet
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	pdbs            []*policyv1.PodDisruptionBudget
	hpas            []*autoscalingv2.HorizontalPodAutoscaler
	serviceMonitors []*monitoringv1.ServiceMonitor
	prometheusRules []*monitoringv1.PrometheusRule
	networkPolicies []*networkingv1.NetworkPolicy
	ingresses       []*networkingv1.Ingress
	gateways        []*gatewayv1.Gateway
	httpRoutes      []*gatewayv1.HTTPRoute
	grpcRoutes      []*gatewayv1.GRPCRoute
	backendTLS      []*gatewayv1.BackendTLSPolicy
}

// renderExample renders the example overlay as committed.
func renderExample(t *testing.T) deployment {
	t.Helper()
	objs, err := render(t, exampleOverlay)
	if err != nil {
		t.Fatal(err)
	}
	d := deployment{all: objs}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			d.statefulSets = append(d.statefulSets, o)
		case *appsv1.Deployment:
			d.deployments = append(d.deployments, o)
		case *corev1.Service:
			d.services = append(d.services, o)
		case *corev1.ConfigMap:
			d.configMaps = append(d.configMaps, o)
		case *corev1.Secret:
			d.secrets = append(d.secrets, o)
		case *policyv1.PodDisruptionBudget:
			d.pdbs = append(d.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			d.hpas = append(d.hpas, o)
		case *monitoringv1.ServiceMonitor:
			d.serviceMonitors = append(d.serviceMonitors, o)
		case *networkingv1.NetworkPolicy:
			d.networkPolicies = append(d.networkPolicies, o)
		case *monitoringv1.PrometheusRule:
			d.prometheusRules = append(d.prometheusRules, o)
		case *networkingv1.Ingress:
			d.ingresses = append(d.ingresses, o)
		case *gatewayv1.Gateway:
			d.gateways = append(d.gateways, o)
		case *gatewayv1.HTTPRoute:
			d.httpRoutes = append(d.httpRoutes, o)
		case *gatewayv1.GRPCRoute:
			d.grpcRoutes = append(d.grpcRoutes, o)
		case *gatewayv1.BackendTLSPolicy:
			d.backendTLS = append(d.backendTLS, o)
		case *corev1.Namespace:
		default:
			t.Fatalf("rendered a %T, which no test looks at", o)
		}
	}
	return d
}

func (d deployment) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	for _, c := range d.configMaps {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no ConfigMap %s", name)
	return nil
}

func (d deployment) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	for _, s := range d.secrets {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Secret %s", name)
	return nil
}

// repoRoot is the root of sluice's module, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "sluice", "main.go")); err != nil {
		t.Fatalf("sluice's module is not at %s: %v", root, err)
	}
	return root
}
