import { render } from 'preact'
import { SharePage } from './share-page'
import '../styles.css'
import '../pages/files.css'
import './share.css'

// `/f/<code>`: the code is the last segment of the page's own path.
const code = decodeURIComponent(location.pathname.replace(/\/+$/, '').split('/').pop() ?? '')
render(<SharePage code={code} />, document.getElementById('app')!)
