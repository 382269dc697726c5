"""Builds and runs the real local control plane (etcd, kube-apiserver, kube-scheduler) for tests and demos."""
