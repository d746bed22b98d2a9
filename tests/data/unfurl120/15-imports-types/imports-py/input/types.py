import tosca


class A(tosca.nodes.Root):
    pass
