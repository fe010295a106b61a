//! The Kubernetes QoS class of a pod.
