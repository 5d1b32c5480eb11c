# script-version: 2
# Catalyst (v2) script for IO.CatalystWritesOneFilePerStep: compresses the mini-app's wavelet
# and writes it with the SGRID extractor. The plugin and the output folder come from the
# environment (SPARSEGRID_PLUGIN_FILE, SPARSEGRID_CATALYST_OUT).
import os

from paraview import catalyst
from paraview.simple import *  # noqa: F401,F403

LoadPlugin(os.environ["SPARSEGRID_PLUGIN_FILE"], remote=False, ns=globals())
producer = TrivialProducer(registrationName="input")
compressed = SparseGridHierarchize(registrationName="compressed", ErrorBoundMode="Off", Input=producer)
compressed.Scalars = ["RTData"]
extractor = CreateExtractor("SGRID", compressed, registrationName="SGRID1")
extractor.Writer.FileName = "wavelet_{timestep:06d}.sgrid"

options = catalyst.Options()
options.ExtractsOutputDirectory = os.environ["SPARSEGRID_CATALYST_OUT"]
options.GlobalTrigger = "TimeStep"
