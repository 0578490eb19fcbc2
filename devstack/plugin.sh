#!/bin/bash
# plugin.sh - devstack plugin of nova-pmem-filters: a dispatcher over
# devstack/lib/nova-pmem-filters. See devstack/README.rst.

source $NOVA_PMEM_FILTERS_DIR/devstack/lib/nova-pmem-filters

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing nova-pmem-filters"
    install_nova_pmem_filters
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring Nova for nova-pmem-filters"
    configure_nova_pmem_filters
elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    echo_summary "Creating nova-pmem-filters aggregates and flavors"
    create_nova_pmem_resources
fi

if [[ "$1" == "unstack" ]]; then
    # The APIs still run: remove the aggregates and flavors we created.
    remove_nova_pmem_resources
fi

if [[ "$1" == "clean" ]]; then
    # clean.sh runs unstack.sh first.
    clean_nova_pmem_filters
fi
